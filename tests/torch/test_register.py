"""customop.torch.register: the torch definition, its kernels, fake, tags, handles, updates."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import customop
import customop.torch
from customop.dispatch import Dispatcher
from customop.exceptions import UnknownOperatorError


def _has_kernel(name: str, key: str) -> bool:
    """Whether torch's op ``name`` has a kernel for ``key`` (False when torch has no such op)."""
    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(name, key))
    except RuntimeError:  # "operator ... does not exist"
        return False


def test_register_defines_the_op_with_the_same_schema(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    @customop.custom_op(f"{ns}::add", mutates_args=(), dispatcher=dispatcher)
    def add(x: customop.Tensor, y: customop.Tensor, alpha: float = 1.0) -> customop.Tensor:
        return x + alpha * y

    track.append(customop.torch.register(add))
    overload = getattr(torch.ops, ns).add.default
    assert str(overload._schema) == str(add.schema)
    x, y = torch.randn(3), torch.randn(3)
    assert torch.equal(overload(x, y, 2.0), x + 2.0 * y)
    assert _has_kernel(f"{ns}::add", "CompositeExplicitAutograd")


@pytest.mark.parametrize(
    ("devices", "keys"),
    [
        (("cpu",), ["CPU"]),
        (("cpu", "cuda"), ["CPU", "CUDA"]),
        (None, ["CompositeExplicitAutograd"]),
    ],
    ids=["cpu", "cpu-cuda", "all-devices"],
)
def test_kernels_map_to_torch_keys(
    ns: str, dispatcher: Dispatcher, track: list[Any], devices: Any, keys: list[str]
) -> None:
    op = customop.custom_op(
        f"{ns}::f",
        lambda x: x * 2,
        mutates_args=(),
        device_types=devices,
        schema="(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )
    track.append(customop.torch.register(op))
    for key in ("CPU", "CUDA", "Meta", "CompositeExplicitAutograd", "CompositeImplicitAutograd"):
        assert _has_kernel(f"{ns}::f", key) == (key in keys), key


def test_composite_implicit_kernel_stays_composite_implicit(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    lib = customop.Library(ns, "DEF", dispatcher=dispatcher)
    track.append(lib)
    lib.define("f(Tensor x) -> Tensor")
    lib.impl("f", lambda x: x.sin() * 2, "CompositeImplicitAutograd")
    track.append(customop.torch.register(f"{ns}::f", dispatcher=dispatcher))
    assert _has_kernel(f"{ns}::f", "CompositeImplicitAutograd")
    x = torch.randn(3, requires_grad=True)
    getattr(torch.ops, ns).f(x).sum().backward()  # autograd through the decomposition
    assert torch.allclose(x.grad, 2 * x.detach().cos())


def test_fake_impl_becomes_torch_fake(ns: str, dispatcher: Dispatcher, track: list[Any]) -> None:
    op = customop.custom_op(
        f"{ns}::f",
        lambda x: x.sum(0),
        mutates_args=(),
        schema="(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )
    op.register_fake(lambda x: customop.new_empty(x, (x.shape[1],)))
    track.append(customop.torch.register(op))
    with FakeTensorMode():
        out = getattr(torch.ops, ns).f(torch.empty(4, 5))
    assert out.shape == (5,)
    assert _has_kernel(f"{ns}::f", "Meta")  # torch's Meta kernel comes from the fake


def test_tags_reach_torch(ns: str, dispatcher: Dispatcher, track: list[Any]) -> None:
    op = customop.custom_op(
        f"{ns}::f",
        lambda x: x.clone(),
        mutates_args=(),
        schema="(Tensor x) -> Tensor",
        tags=("pt2_compliant_tag",),
        dispatcher=dispatcher,
    )
    track.append(customop.torch.register(op))
    assert torch.Tag.pt2_compliant_tag in getattr(torch.ops, ns).f.default.tags


def test_removing_the_handle_removes_the_op_from_torch(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    op = customop.custom_op(
        f"{ns}::f",
        lambda x: x + 1,
        mutates_args=(),
        schema="(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )
    track.append(op)
    handle = customop.torch.register(op)
    x = torch.zeros(2)
    assert torch.equal(op(x), x + 1)
    handle.remove()
    handle.remove()  # idempotent
    assert not _has_kernel(f"{ns}::f", "CompositeExplicitAutograd")
    assert not hasattr(getattr(torch.ops, ns), "f")
    assert torch.equal(op(x), x + 1)  # the customop op still runs on torch tensors
    assert torch.equal(op.op(x), x + 1)


def test_register_twice_registers_once(ns: str, dispatcher: Dispatcher, track: list[Any]) -> None:
    op = customop.custom_op(
        f"{ns}::f",
        lambda x: x + 1,
        mutates_args=(),
        schema="(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )
    first = customop.torch.register(op)
    second = customop.torch.register(f"{ns}::f", dispatcher=dispatcher)
    first.remove()
    assert _has_kernel(f"{ns}::f", "CompositeExplicitAutograd")
    second.remove()
    assert not _has_kernel(f"{ns}::f", "CompositeExplicitAutograd")


def test_later_registrations_reach_torch(ns: str, dispatcher: Dispatcher, track: list[Any]) -> None:
    op = customop.custom_op(
        f"{ns}::f",
        lambda x: x + 1,
        mutates_args=(),
        device_types="cpu",
        schema="(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )
    track.append(customop.torch.register(op))
    x = torch.zeros(2)
    torch_op = getattr(torch.ops, ns).f.default
    with pytest.warns(customop.KernelOverrideWarning):
        kernel = customop.handle_of(op.register_kernel("cpu", lambda x: x + 5))
    assert torch.equal(torch_op(x), x + 5)
    kernel.remove()
    assert torch.equal(torch_op(x), x + 1)
    assert not _has_kernel(f"{ns}::f", "Meta")
    fake = customop.handle_of(op.register_fake(lambda x: customop.empty_like(x)))
    with FakeTensorMode():
        assert torch_op(torch.empty(3)).shape == (3,)
    fake.remove()
    with FakeTensorMode(), pytest.raises(Exception, match="f"):
        torch_op(torch.empty(3))


def test_namespace_takes_ops_defined_later(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    track.append(customop.torch.register(ns, dispatcher=dispatcher))
    op = customop.custom_op(
        f"{ns}::late",
        lambda x: x * 3,
        mutates_args=(),
        schema="(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )
    track.append(op)
    x = torch.ones(2)
    assert torch.equal(getattr(torch.ops, ns).late(x), x * 3)
    op._library.close()  # the def goes: so does the torch op
    assert not _has_kernel(f"{ns}::late", "CompositeExplicitAutograd")


@pytest.mark.parametrize("spelling", ["packet", "overload", "name"], ids=str)
def test_targets(ns: str, track: list[Any], spelling: str) -> None:
    op = customop.custom_op(
        f"{ns}::f", lambda x: x + 2, mutates_args=(), schema="(Tensor x) -> Tensor"
    )
    track.append(op)
    packet = getattr(customop.ops, ns).f
    target = {"packet": packet, "overload": packet.default, "name": f"{ns}::f"}[spelling]
    track.append(customop.torch.register(target))
    x = torch.zeros(1)
    assert torch.equal(getattr(torch.ops, ns).f(x), x + 2)


@pytest.mark.parametrize(
    ("target", "error"),
    [("nope::missing", UnknownOperatorError), ("not a name", ValueError), (3, TypeError)],
    ids=["unknown-op", "bad-namespace", "not-an-op"],
)
def test_bad_targets(target: object, error: type[Exception]) -> None:
    with pytest.raises(error, match=r"customop\.torch\.register: "):
        customop.torch.register(target)


def test_op_defined_in_torch_already_is_refused(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    lib = torch.library.Library(ns, "FRAGMENT")
    lib.define("f(Tensor x) -> Tensor")
    op = customop.custom_op(
        f"{ns}::f",
        lambda x: x,
        mutates_args=(),
        schema="(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )
    with pytest.raises(customop.RegistrationError, match="torch refused to define"):
        customop.torch.register(op)
    lib._destroy()
    track.append(customop.torch.register(op))  # nothing was left behind by the failure
    assert torch.equal(getattr(torch.ops, ns).f(torch.ones(1)), torch.ones(1))

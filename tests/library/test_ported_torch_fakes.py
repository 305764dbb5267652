"""torch's tests whose fake impls are written with torch's API, ported to customop's fakes.

From ``test/test_custom_ops.py`` (torch 2.13), on customop alone, on torch
tensors: the fake impls call ``x.clone()``, ``x.sin()``, ``x.sum()``,
``x * 1``, ``torch.cat``, ``torch.empty_like`` on customop's `FakeTensor`.
Ported by ``docs/migration.md``: ``torch.library`` is ``customop``, torch's
``FakeTensorMode`` is customop's (a fake comes from ``mode.from_real``),
``make_fx`` is ``customop.trace``, ``torch.ops`` is ``customop.ops``, the old
``torch._custom_ops.custom_op`` is ``customop.custom_op``; each op lives in a
fresh dispatcher. unittest's assertions are pytest's; what they assert is
torch's.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import customop  # noqa: E402
from customop.dispatch import Dispatcher  # noqa: E402
from customop.library import Ops  # noqa: E402

Tensor = torch.Tensor
TEST_NS = "_test_custom_op"


_LIBRARIES: list[customop.Library] = []


@pytest.fixture(autouse=True)
def _libraries() -> Any:
    """torch's ``self.lib()``: libraries kept until the test ends (closed on collection)."""
    yield
    while _LIBRARIES:
        _LIBRARIES.pop().close()


def _lib(d: Dispatcher) -> customop.Library:
    lib = customop.Library(TEST_NS, "FRAGMENT", dispatcher=d)
    _LIBRARIES.append(lib)
    return lib


def test_single_element_tuple_output(d: Dispatcher) -> None:
    def get_id_tuple() -> Any:
        @customop.custom_op("test::id_tuple", mutates_args=[], dispatcher=d)
        def id_tuple(x: Tensor) -> tuple[Tensor]:
            return (x.clone(),)

        @id_tuple.register_fake
        def _(x: Tensor) -> tuple[Tensor]:
            return (x.clone(),)

        return id_tuple

    id_tuple = get_id_tuple()
    x = torch.randn(3)
    ret = id_tuple(x)
    assert isinstance(ret, tuple)
    assert len(ret) == 1
    torch.testing.assert_close(x, ret[0])


def test_abstract_impl_on_existing_op(d: Dispatcher) -> None:
    lib = _lib(d)
    lib.define("foo(Tensor x) -> Tensor")
    qualname = f"{TEST_NS}::foo"

    @customop.register_fake(qualname, lib=_lib(d))
    def foo_impl(x: Any) -> Any:
        return x.sin()

    op = Ops(d)._test_custom_op.foo.default
    with customop.FakeTensorMode() as mode:
        x = mode.from_real(torch.randn(3))
        result = op(x)
        assert result.shape == x.shape
        assert result.stride() == x.stride()


def test_abstract_impl_on_existing_op_with_CompositeExplicitAutograd(d: Dispatcher) -> None:
    lib = _lib(d)
    lib.define("foo(Tensor x) -> Tensor")
    qualname = f"{TEST_NS}::foo"

    def foo_impl(x: Any) -> Any:
        return x.sin()

    lib.impl("foo", foo_impl, "CompositeExplicitAutograd")
    op = Ops(d)._test_custom_op.foo.default

    customop.register_fake(qualname, lambda x: x.sum(), lib=_lib(d))
    with customop.FakeTensorMode() as mode:
        x = mode.from_real(torch.randn(10))
        result = op(x)
        assert result.shape == ()


def test_override_fake(d: Dispatcher) -> None:
    lib = _lib(d)
    op_name = f"{TEST_NS}::foo"
    customop.define(op_name, "(Tensor x) -> Tensor", lib=lib)
    op = Ops(d)._test_custom_op.foo.default

    def foo_impl1(x: Any) -> Any:
        return x * 1

    customop.register_fake(op_name, foo_impl1, lib=lib)

    with customop.FakeTensorMode() as mode:
        assert op(mode.from_real(torch.ones(3))).shape == (3,)
    assert op(torch.ones(3, device="meta")).shape == (3,)

    def foo_impl2(x: Any) -> Any:
        return torch.cat([x, x])

    with pytest.raises(RuntimeError, match="already has a fake impl"):
        customop.register_fake(op_name, foo_impl2, lib=lib, allow_override=False)

    # customop warns at each override (docs/migration.md); torch replaces silently.
    with pytest.warns(customop.KernelOverrideWarning):
        customop.register_fake(op_name, foo_impl2, lib=lib)
    with customop.FakeTensorMode() as mode:
        assert op(mode.from_real(torch.ones(3))).shape == (6,)
    assert op(torch.ones(3, device="meta")).shape == (6,)

    with customop.Library(TEST_NS, "FRAGMENT", dispatcher=d) as lib2:
        with pytest.warns(customop.KernelOverrideWarning):
            customop.register_fake(op_name, foo_impl1, lib=lib2)
        with customop.FakeTensorMode() as mode:
            assert op(mode.from_real(torch.ones(3))).shape == (3,)
        assert op(torch.ones(3, device="meta")).shape == (3,)

    with customop.FakeTensorMode() as mode:
        assert op(mode.from_real(torch.ones(3))).shape == (6,)
    assert op(torch.ones(3, device="meta")).shape == (6,)


@pytest.mark.parametrize("mode_name", ["function", "qualname", "opoverload"])
def test_library_register_fake(d: Dispatcher, mode_name: str) -> None:
    @customop.custom_op("_torch_testing::add", mutates_args=(), dispatcher=d)
    def add(x: Tensor, y: float) -> Tensor:
        x_np = x.cpu().numpy()
        out_np = x_np + y
        return torch.from_numpy(out_np).to(x.device)

    called = False

    if mode_name == "function":
        dec = customop.register_fake(add)
        assert dec is not None
    elif mode_name == "qualname":
        dec = customop.register_fake("_torch_testing::add", dispatcher=d)
        assert dec is not None
    else:
        dec = customop.register_fake(Ops(d)._torch_testing.add.default)
        assert dec is not None

    @dec
    def _(x: Any, y: Any) -> Any:
        nonlocal called
        called = True
        return torch.empty_like(x)

    with customop.FakeTensorMode() as mode:
        x = mode.from_real(torch.randn(3))
        y = 3.14
        z = add(x, y)
        assert z.shape == x.shape
        assert called


def test_basic_make_fx(d: Dispatcher) -> None:
    @customop.custom_op(f"{TEST_NS}::foo", mutates_args=(), dispatcher=d)
    def foo(x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    @customop.register_fake(f"{TEST_NS}::foo", lib=_lib(d))
    def foo_meta(x: Any) -> Any:
        return x.sum()

    x = torch.randn(3)
    op = Ops(d)._test_custom_op.foo.default
    gm = customop.trace(op, x, dispatcher=d)
    assert f"{TEST_NS}.foo" in str(gm)

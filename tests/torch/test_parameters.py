"""nn.Parameter arguments take the eager fast path; other tensor subclasses keep torch's (#29).

Every module weight is an ``nn.Parameter``, which disables ``__torch_function__``:
torch treats it as a plain tensor for dispatch, and so does the call code.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import customop
import customop.torch
from customop.adapter import installed_call
from tests.torch.subclasses import FunctionTensor


@pytest.fixture
def scale(ns: str, track: list[Any]) -> Iterator[tuple[Any, list[int]]]:
    """``x * w`` with a formula, a fake, and a count of kernel calls."""
    calls: list[int] = []

    @customop.custom_op(f"{ns}::scale", mutates_args=())
    def op(x: customop.Tensor, w: customop.Tensor) -> customop.Tensor:
        calls.append(1)
        return x * w

    op.register_fake(lambda x, w: customop.empty_like(x))
    op.register_autograd(
        lambda ctx, grad: (grad * ctx.saved_tensors[1], grad * ctx.saved_tensors[0]),
        setup_context=lambda ctx, inputs, output: ctx.save_for_backward(*inputs),
    )
    track += [op, customop.torch.register(op)]
    yield op, calls


def _spellings(op: Any, ns: str) -> dict[str, Callable[..., Any]]:
    return {
        "object": op,
        "customop.ops": lambda *a: getattr(customop.ops, ns).scale(*a),
        "overload": getattr(customop.ops, ns).scale.default,
    }


@pytest.fixture(params=["object", "customop.ops", "overload"], ids=str)
def spelled(
    request: pytest.FixtureRequest, scale: tuple[Any, list[int]], ns: str
) -> tuple[Any, Callable[..., Any], list[int]]:
    """``(op, call, kernel calls)``: the scale op, called through one spelling."""
    op, calls = scale
    return op, _spellings(op, ns)[request.param], calls


class _Ops(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize(
    "context",
    [torch.no_grad, torch.inference_mode, None],
    ids=["no_grad", "inference_mode", "grad-mode-frozen-weight"],
)
def test_parameter_weights_take_the_fast_path(
    spelled: tuple[Any, Callable[..., Any], list[int]], context: Any
) -> None:
    op, call, calls = spelled
    x = torch.ones(3)
    weight = torch.nn.Parameter(torch.full((3,), 2.0), requires_grad=context is not None)
    site = installed_call(op)
    with _handed_to_torch(op) as to_torch, context() if context else torch.enable_grad():
        for _ in range(3):  # the first call fills the cache, the next take it
            assert torch.equal(call(x, weight), torch.full((3,), 2.0))
        assert site.cache[2] is torch.nn.Parameter  # the entry holds the weight's type
    assert (len(calls), to_torch) == (3, [])  # the kernel ran directly, three times


def test_module_buffers_take_the_fast_path(
    spelled: tuple[Any, Callable[..., Any], list[int]],
) -> None:
    op, call, calls = spelled
    module = torch.nn.Module()
    module.kept = torch.nn.Buffer(torch.full((3,), 2.0))  # torch's Buffer: a plain tensor
    module.register_buffer("registered", torch.full((3,), 3.0))
    with _handed_to_torch(op) as to_torch:
        for _ in range(3):
            assert torch.equal(call(torch.ones(3), module.kept), torch.full((3,), 2.0))
            assert torch.equal(call(torch.ones(3), module.registered), torch.full((3,), 3.0))
    assert (len(calls), to_torch) == (6, [])


@contextlib.contextmanager
def _handed_to_torch(op: Any) -> Iterator[list[int]]:
    """A list that counts the calls any spelling of ``op`` hands to torch's op meanwhile."""
    site = installed_call(op)
    mirror = site.mirror  # one per op: every spelling's call code hands calls to it
    to_torch: list[int] = []
    entry, overload, dynamo = mirror.torch_entry, mirror.torch_op, site.namespace["_co_op"]

    def counted(real: Any) -> Any:
        def spy(*args: Any, **kwargs: Any) -> Any:
            to_torch.append(1)
            return real(*args, **kwargs)

        return spy

    # In eager, calls reach torch through the entry; under Dynamo through _co_op.
    mirror.torch_entry, mirror.torch_op = counted(entry), counted(overload)
    site.namespace["_co_op"] = counted(dynamo)
    try:
        yield to_torch
    finally:
        mirror.torch_entry, mirror.torch_op, site.namespace["_co_op"] = entry, overload, dynamo


def test_the_hand_over_count_sees_calls_torch_runs(scale: tuple[Any, list[int]], ns: str) -> None:
    op, _ = scale
    sub = torch.ones(3).as_subclass(FunctionTensor)
    for call in _spellings(op, ns).values():
        with torch.no_grad(), _handed_to_torch(op) as to_torch:
            call(sub, torch.ones(3))
        assert to_torch == [1]  # a subclass's call: handed to torch, and counted


def test_a_parameter_that_needs_grad_goes_through_torch_autograd(
    scale: tuple[Any, list[int]], ns: str
) -> None:
    op, _ = scale
    for call in _spellings(op, ns).values():
        x = torch.ones(3, requires_grad=True)
        weight = torch.nn.Parameter(torch.full((3,), 2.0))
        plain_x = torch.ones(3, requires_grad=True)
        plain_w = torch.full((3,), 2.0, requires_grad=True)
        out, plain = call(x, weight), call(plain_x, plain_w)
        assert torch.equal(out, plain) and out.grad_fn is not None
        out.sum().backward()
        plain.sum().backward()
        assert torch.equal(x.grad, plain_x.grad)
        assert torch.equal(weight.grad, plain_w.grad)


def test_tensor_list_and_optional_arguments_holding_parameters(ns: str, track: list[Any]) -> None:
    calls: list[int] = []

    @customop.custom_op(f"{ns}::total", mutates_args=())
    def total(xs: list[customop.Tensor], bias: customop.Tensor | None) -> customop.Tensor:
        calls.append(1)
        out = sum(xs[1:], xs[0])
        return out if bias is None else out + bias

    total.register_fake(lambda xs, bias: customop.empty_like(xs[0]))
    track += [total, customop.torch.register(total)]
    weight = torch.nn.Parameter(torch.ones(2))
    bias = torch.nn.Parameter(torch.ones(2))
    plain = torch.ones(2)
    packet = getattr(customop.ops, ns).total
    with torch.no_grad(), _handed_to_torch(total) as to_torch:
        for _ in range(3):  # the first call fills the cache, the next take it
            assert torch.equal(total([plain, weight], bias), torch.full((2,), 3.0))
            assert torch.equal(total([weight, weight], None), torch.full((2,), 2.0))
    with torch.no_grad(), _handed_to_torch(packet) as packet_to_torch:
        for _ in range(3):
            assert torch.equal(packet([weight], None), torch.ones(2))
            assert torch.equal(packet.default([weight], bias), torch.full((2,), 2.0))
    assert (len(calls), to_torch, packet_to_torch) == (12, [], [])  # all ran directly
    with _Ops() as mode:  # no fast path under a dispatch mode: torch sees the op
        total([plain, weight], bias)
    assert f"{ns}.total.default" in mode.seen


class _DispatchTensor(torch.Tensor):
    """A wrapper subclass with its own __torch_dispatch__: it sees every op below autograd."""

    seen: ClassVar[list[str]] = []

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> Any:
        wrapped = torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype)
        wrapped.elem = elem  # type: ignore[attr-defined]
        return wrapped

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        cls.seen.append(str(func))
        unwrap = [a.elem if isinstance(a, _DispatchTensor) else a for a in args]
        return func(*unwrap, **(kwargs or {}))


def test_subclasses_with_their_own_hooks_keep_torchs_path(
    spelled: tuple[Any, Callable[..., Any], list[int]], ns: str
) -> None:
    _, call, _ = spelled
    plain = torch.full((3,), 2.0)
    FunctionTensor.seen.clear()
    function_tensor = torch.ones(3).as_subclass(FunctionTensor)
    for _ in range(2):
        assert torch.equal(call(function_tensor, plain).as_subclass(torch.Tensor), plain)
    assert sum(f"{ns}.scale" in name for name in FunctionTensor.seen) == 2
    _DispatchTensor.seen.clear()
    with torch.no_grad():
        for _ in range(2):
            out = call(_DispatchTensor(torch.ones(3)), plain)
    assert torch.equal(out, plain)
    assert _DispatchTensor.seen.count(f"{ns}.scale.default") == 2


class _Model(torch.nn.Module):
    """Linear -> op -> the op's weight: every weight an nn.Parameter, as in a real model."""

    def __init__(self, op: Any) -> None:
        super().__init__()
        self.op = op
        self.linear = torch.nn.Linear(3, 3)
        self.weight = torch.nn.Parameter(torch.full((3,), 2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.op(self.linear(x), self.weight)  # type: ignore[no-any-return]


# torch.compile's default backend, as users call it: it compiles C++ (slow), and
# importing it warns of torch.jit (torch's own code, which customop does not use).
_INDUCTOR = pytest.param(
    "inductor",
    marks=[
        pytest.mark.slow,
        pytest.mark.filterwarnings("ignore:.*torch.jit.script_method.*:DeprecationWarning"),
    ],
)


@pytest.mark.parametrize("backend", ["aot_eager", _INDUCTOR], ids=str)
def test_compile_with_parameter_arguments_equals_plain(
    scale: tuple[Any, list[int]], backend: str
) -> None:
    op, _ = scale
    torch.manual_seed(0)
    model = _Model(op)
    x = torch.randn(4, 3)
    # The same computation on plain tensors that require grad, in eager and compiled.

    def functional(x: torch.Tensor, lw: torch.Tensor, lb: torch.Tensor, w: torch.Tensor) -> Any:
        return op(torch.nn.functional.linear(x, lw, lb), w)

    weights = [model.linear.weight, model.linear.bias, model.weight]
    ordered = [w.detach().clone().requires_grad_() for w in weights]
    runs: dict[str, tuple[torch.Tensor, list[torch.Tensor]]] = {}
    for kind in ("eager-plain", "compiled-plain", "compiled-parameters"):
        torch._dynamo.reset()
        if kind == "compiled-parameters":
            out = torch.compile(model, fullgraph=True, backend=backend)(x)
            inputs = weights
        else:
            call = (
                functional
                if kind == "eager-plain"
                else torch.compile(functional, fullgraph=True, backend=backend)
            )
            out = call(x, *ordered)
            inputs = ordered
        grads = torch.autograd.grad(out.sum(), inputs)
        runs[kind] = (out.detach(), [g.detach() for g in grads])
    reference_out, reference_grads = runs["eager-plain"]
    for kind in ("compiled-plain", "compiled-parameters"):
        out, grads = runs[kind]
        assert torch.allclose(out, reference_out), kind
        assert all(torch.allclose(g, r) for g, r in zip(grads, reference_grads, strict=True)), kind
    with torch.no_grad():  # and the no-grad forward, where Parameters take the fast path
        torch._dynamo.reset()
        assert torch.allclose(
            torch.compile(model, fullgraph=True, backend=backend)(x), reference_out
        )

"""customop autograd formulas under torch.autograd: training, gradcheck, parity with torch."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import customop
import customop.torch
from customop.dispatch import Dispatcher


def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
    x, w = inputs
    ctx.save_for_backward(x, w)


def backward(ctx: Any, grad: Any) -> Any:
    x, w = ctx.saved_tensors
    return grad @ w.t() * ctx.needs_input_grad[0], x.t() @ grad


def _linear(x: Any, w: Any) -> Any:
    return x @ w


def _customop_linear(ns: str, dispatcher: Dispatcher, track: list[Any]) -> Any:
    op = customop.custom_op(
        f"{ns}::linear",
        _linear,
        mutates_args=(),
        schema="(Tensor x, Tensor w) -> Tensor",
        dispatcher=dispatcher,
    )
    op.register_fake(lambda x, w: customop.new_empty(x, (x.shape[0], w.shape[1])))
    op.register_autograd(backward, setup_context=setup_context)
    track += [op, customop.torch.register(op)]
    return op


def test_trains(ns: str, dispatcher: Dispatcher, track: list[Any]) -> None:
    op = _customop_linear(ns, dispatcher, track)
    torch.manual_seed(0)
    x = torch.randn(16, 3)
    target = x @ torch.tensor([[1.0], [-2.0], [0.5]])
    w = torch.zeros(3, 1, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=0.1)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss = ((op(x, w) - target) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] / 10


def test_gradcheck_float64(ns: str, dispatcher: Dispatcher, track: list[Any]) -> None:
    op = _customop_linear(ns, dispatcher, track)
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(op, (x, w))
    assert torch.autograd.gradcheck(getattr(torch.ops, ns).linear.default, (x, w))


def test_grads_equal_torch_custom_op(ns: str, dispatcher: Dispatcher, track: list[Any]) -> None:
    op = _customop_linear(ns, dispatcher, track)
    reference = torch.library.custom_op(
        f"{ns}_torch::linear", _linear, mutates_args=(), schema="(Tensor x, Tensor w) -> Tensor"
    )
    reference.register_autograd(backward, setup_context=setup_context)
    x, w = torch.randn(5, 3, requires_grad=True), torch.randn(3, 2, requires_grad=True)
    grad = torch.randn(5, 2)
    ours = torch.autograd.grad(op(x, w), (x, w), grad)
    theirs = torch.autograd.grad(reference(x, w), (x, w), grad)
    for a, b in zip(ours, theirs, strict=True):
        assert torch.equal(a, b)
    reference._lib._destroy()


def test_formula_registered_later_reaches_torch(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    op = customop.custom_op(
        f"{ns}::double",
        lambda x: x * 2,
        mutates_args=(),
        schema="(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )
    track += [op, customop.torch.register(op)]
    formula = op.register_autograd(lambda ctx, grad: grad * 10)  # deliberately not 2
    x = torch.ones(2, requires_grad=True)
    op(x).sum().backward()
    assert torch.equal(x.grad, torch.full((2,), 10.0))
    formula.remove()
    # No formula on a @custom_op: torch's custom_op error, as torch gives it.
    out = op(x)
    assert out.requires_grad
    with pytest.raises(RuntimeError, match="no autograd formula was registered"):
        out.sum().backward()


def test_library_op_without_formula_keeps_torch_warning(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    lib = customop.Library(ns, "FRAGMENT", dispatcher=dispatcher)
    track.append(lib)
    lib.define("double(Tensor x) -> Tensor")
    lib.impl("double", lambda x: x * 2, "CPU")
    track.append(customop.torch.register(ns, dispatcher=dispatcher))
    x = torch.ones(2, requires_grad=True)
    # No formula: torch treats the op as any Library op without an autograd kernel.
    with pytest.warns(UserWarning, match="autograd kernel was not registered"):
        getattr(torch.ops, ns).double(x).sum().backward()

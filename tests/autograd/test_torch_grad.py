"""An op with a formula, not registered in torch, refuses torch tensors torch's autograd tracks.

torch would differentiate the op's body and skip the formula: for the
straight-through estimator below (a rounding body, an identity formula) that
is a gradient of zeros, returned without a word. The call raises instead,
naming the op, the argument and the fix; everything that needs no gradient runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from customop import AutogradError, custom_op  # noqa: E402
from customop.dispatch import Dispatcher  # noqa: E402

_FIX = r"customop\.torch\.register\(op\)"


def _round(dispatcher: Dispatcher) -> Any:
    """Rounding with a straight-through formula: torch's own derivative of the body is 0."""

    @custom_op("tg::round", mutates_args=(), dispatcher=dispatcher)
    def round_(x: torch.Tensor) -> torch.Tensor:
        return torch.round(x)

    round_.register_autograd(lambda ctx, grad: grad)
    return round_


def test_a_tracked_tensor_is_refused_with_the_op_the_argument_and_the_fix(
    dispatcher: Dispatcher,
) -> None:
    x = torch.tensor([0.2, 1.7, 2.4], requires_grad=True)
    message = (
        r"^'tg::round': argument 'x' is a torch tensor that requires grad \(shape \(3,\), "
        rf"dtype torch.float32\), and the op has an autograd formula.*{_FIX}"
    )
    with pytest.raises(AutogradError, match=message):
        _round(dispatcher)(x)
    with pytest.raises(AutogradError, match="argument 'x'"):  # by keyword too
        _round(dispatcher)(x=x)


def test_torch_func_grad_is_refused_too(dispatcher: Dispatcher) -> None:
    round_ = _round(dispatcher)  # torch.func.grad's inputs track gradients at its level
    with pytest.raises(AutogradError, match=rf"'tg::round': argument 'x' .*{_FIX}"):
        torch.func.grad(lambda x: round_(x).sum())(torch.tensor([0.2, 1.7]))


@contextlib.contextmanager
def _as_is() -> Iterator[None]:
    yield


_UNTRACKED: dict[str, tuple[Callable[[], Any], bool]] = {
    "no_grad": (torch.no_grad, True),
    "inference_mode": (torch.inference_mode, True),
    "tensor-without-grad": (_as_is, False),
}


@pytest.mark.parametrize("case", list(_UNTRACKED), ids=str)
def test_calls_torch_does_not_track_run_the_body(dispatcher: Dispatcher, case: str) -> None:
    context, requires_grad = _UNTRACKED[case]
    x = torch.tensor([0.2, 1.7, 2.4], requires_grad=requires_grad)
    with context():
        out = _round(dispatcher)(x)
    assert torch.equal(out, torch.tensor([0.0, 2.0, 2.0])) and not out.requires_grad


def test_a_tracked_item_of_a_tensor_list_is_named(dispatcher: Dispatcher) -> None:
    @custom_op("tg::total", mutates_args=(), dispatcher=dispatcher)
    def total(xs: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack(xs).sum(0).detach()

    total.register_autograd(lambda ctx, grad: [grad, grad])
    xs = [torch.ones(2), torch.ones(2, requires_grad=True)]
    with pytest.raises(AutogradError, match=rf"'tg::total': argument 'xs\[1\]' .*{_FIX}"):
        total(xs)


def test_an_op_without_a_formula_is_differentiated_by_torch(dispatcher: Dispatcher) -> None:
    @custom_op("tg::double", mutates_args=(), dispatcher=dispatcher)
    def double(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    x = torch.ones(3, requires_grad=True)  # no formula claims the gradient: the body's holds
    (grad,) = torch.autograd.grad(double(x).sum(), x)
    assert torch.equal(grad, torch.full((3,), 2.0))


@pytest.mark.parametrize("order", ["formula-then-register", "register-then-formula"], ids=str)
def test_registered_in_torch_the_formula_gives_the_gradient(
    dispatcher: Dispatcher, order: str
) -> None:
    bridge = pytest.importorskip("customop.torch")

    @custom_op("tg::round", mutates_args=(), dispatcher=dispatcher)
    def round_(x: torch.Tensor) -> torch.Tensor:
        return torch.round(x)

    if order == "register-then-formula":
        handle = bridge.register(round_)
        round_.register_autograd(lambda ctx, grad: grad)
    else:
        round_.register_autograd(lambda ctx, grad: grad)
        handle = bridge.register(round_)
    x = torch.tensor([0.2, 1.7, 2.4], requires_grad=True)
    try:
        out = round_(x)
        (grad,) = torch.autograd.grad(out.sum(), x)
    finally:
        handle.remove()
    assert torch.equal(out.detach(), torch.tensor([0.0, 2.0, 2.0]))
    assert torch.equal(grad, torch.ones(3))  # the straight-through formula, not torch's zeros
    with pytest.raises(AutogradError, match=rf"'tg::round': argument 'x' .*{_FIX}"):
        round_(x)  # out of torch again: refused, not the body's zeros

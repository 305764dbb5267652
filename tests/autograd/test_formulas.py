"""Ten and more real formulas pass gradcheck; a wrong one fails it, naming the input."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from customop import GradcheckError, gradcheck
from customop.dispatch import Dispatcher
from tests.autograd.formulas import define

RNG = np.random.default_rng(7)


def _r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


X23, Y23 = _r(2, 3), _r(2, 3)
LABELS = np.array([0, 2, 1])

CASES: dict[str, tuple[Callable[[SimpleNamespace], Any], tuple[Any, ...]]] = {
    "add": (lambda n: n.add, (X23, Y23)),
    "sub": (lambda n: n.sub, (X23, Y23)),
    "mul": (lambda n: n.mul, (X23, Y23)),
    "scale-int-argument": (lambda n: n.scale, (X23, 3)),
    "exp": (lambda n: n.exp, (X23,)),
    "tanh": (lambda n: n.tanh, (X23,)),
    "sum-reduction": (lambda n: n.total, (X23,)),
    "sum_dim-int-argument": (lambda n: n.sum_dim, (_r(2, 3, 4), 1)),
    "matmul": (lambda n: n.matmul, (_r(2, 3), _r(3, 4))),
    "batched-matmul": (lambda n: n.matmul, (_r(2, 2, 3), _r(2, 3, 2))),
    "transpose": (lambda n: n.transpose, (_r(3, 4),)),
    "softmax": (lambda n: n.softmax, (_r(3, 5), -1)),
    "layer_norm": (lambda n: n.layer_norm, (_r(4, 6), _r(6), _r(6), 1e-5)),
    "flash_attn-two-outputs": (
        lambda n: n.flash_attn_forward,
        (_r(2, 4, 3), _r(2, 5, 3), _r(2, 5, 2), 0.5),
    ),
    "nll-int-input": (lambda n: n.nll, (np.log(np.full((3, 4), 0.25)) + _r(3, 4), LABELS)),
    "sincos-two-outputs": (lambda n: n.sincos, (X23,)),
    "expand_as": (lambda n: n.expand_as, (_r(), X23)),
}


@pytest.fixture
def nn(dispatcher: Dispatcher) -> SimpleNamespace:
    return define(dispatcher)


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_formula_passes_gradcheck(nn: SimpleNamespace, case: str) -> None:
    pick, args = CASES[case]
    assert gradcheck(pick(nn), args) is True


def test_a_composition_passes_gradcheck(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    def mlp(x: Any, w1: Any, w2: Any) -> Any:
        hidden = nn.tanh(nn.matmul(x, w1))
        return nn.total(nn.softmax(nn.matmul(hidden, w2), -1))

    assert gradcheck(mlp, (_r(3, 4), _r(4, 5), _r(5, 2)), dispatcher=dispatcher)


def test_a_wrong_formula_fails_naming_the_input(nn: SimpleNamespace) -> None:
    with pytest.raises(GradcheckError) as info:
        gradcheck(nn.square_wrong, (np.array([1.0, 2.0, -3.0]),))
    message = str(info.value)
    assert message.startswith(
        "gradcheck: the gradient of input 'x' does not match finite differences: at index "
    )
    assert "3 of 3 elements off; atol=1e-05, rtol=0.001" in message


def test_gradcheck_needs_a_float_input(nn: SimpleNamespace) -> None:
    with pytest.raises(ValueError, match="no argument is a float array"):
        gradcheck(nn.nll, (np.array([1, 2]), LABELS))


def test_float32_inputs_are_checked_in_float64(nn: SimpleNamespace) -> None:
    x = _r(2, 3).astype(np.float32)
    assert gradcheck(nn.exp, (x,))
    assert x.dtype == np.float32  # the argument is copied, not changed

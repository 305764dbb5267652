"""gradcheck fails on a gradient that is not finite, either side, naming op, input and element."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from customop import GradcheckError, custom_op, gradcheck
from customop.dispatch import Dispatcher

X = np.array([1.0, 2.0, 3.0])


def _square(dispatcher: Dispatcher, backward: Any) -> Any:
    @custom_op("gc::square", mutates_args=(), dispatcher=dispatcher)
    def square(x: np.ndarray) -> np.ndarray:
        return x * x

    square.register_autograd(backward, setup_context=lambda ctx, i, o: setattr(ctx, "x", i[0]))
    return square


@pytest.mark.parametrize(
    ("backward", "element", "value"),
    [
        (lambda ctx, g: np.full(g.shape, np.nan), "(0,)", "nan"),
        (lambda ctx, g: np.where(np.arange(3) == 1, np.nan, 2 * ctx.x * g), "(1,)", "nan"),
        (lambda ctx, g: np.where(np.arange(3) == 2, np.inf, 2 * ctx.x * g), "(2,)", "inf"),
    ],
    ids=["all-nan", "one-nan", "one-inf"],
)
def test_a_formula_that_is_not_finite_fails(
    dispatcher: Dispatcher, backward: Any, element: str, value: str
) -> None:
    square = _square(dispatcher, backward)
    with pytest.raises(GradcheckError) as info:
        gradcheck(square, (X,))
    assert str(info.value) == (
        f"gradcheck: the analytic gradient of input 'x' of 'gc::square' is {value} at index "
        f"{element}. A gradient that is not finite cannot be compared (NaN is unequal to "
        "everything), so the check would prove nothing. Fix the backward formula "
        "(register_autograd), or check at a point where the op is differentiable."
    )


def test_an_op_that_is_not_finite_at_the_point_fails(dispatcher: Dispatcher) -> None:
    @custom_op("gc::log", mutates_args=(), dispatcher=dispatcher)
    def log(x: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.log(x)

    log.register_autograd(
        lambda ctx, g: g / ctx.x, setup_context=lambda ctx, i, o: setattr(ctx, "x", i[0])
    )
    with pytest.raises(GradcheckError) as info:
        gradcheck(log, (np.array([1.0, -1.0]),))
    assert str(info.value) == (
        "gradcheck: output 0 of 'gc::log' is nan at index (1,): the forward is not finite at "
        "the point. A gradient that is not finite cannot be compared (NaN is unequal to "
        "everything), so the check would prove nothing. Check at a point where the op is "
        "finite and differentiable."
    )
    # Finite at the point, not within eps of it: the numeric side is NaN.
    numeric = r"the numeric gradient of input 'x' of 'gc::log' is nan at index \(0,\): the forward"
    with pytest.raises(GradcheckError, match=numeric):
        gradcheck(log, (np.array([1e-9]),), eps=1e-6)


def test_a_function_is_named_by_its_name(dispatcher: Dispatcher) -> None:
    square = _square(dispatcher, lambda ctx, g: np.full(g.shape, np.nan))

    def loss(x: Any) -> Any:
        return square(x)

    with pytest.raises(GradcheckError, match=r"input 'x' of function 'test_a_function_is_named"):
        gradcheck(loss, (X,), dispatcher=dispatcher)

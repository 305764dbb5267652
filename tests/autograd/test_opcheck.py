"""opcheck(..., grad=True): test_autograd_registration (torch's meaning) and test_gradcheck."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from customop import Library, OpCheckError, custom_op, opcheck
from customop.dispatch import Dispatcher
from customop.tensor import empty_like
from tests.autograd.formulas import define

X = np.random.default_rng(3).standard_normal((2, 3))
ALL = ("test_schema", "test_faketensor", "test_trace")
GRAD = ("test_autograd_registration", "test_gradcheck")


@pytest.fixture
def nn(dispatcher: Dispatcher) -> SimpleNamespace:
    return define(dispatcher)


def _inference_op(dispatcher: Dispatcher) -> Any:
    @custom_op("oc::double", mutates_args=(), dispatcher=dispatcher)
    def double(x: np.ndarray) -> np.ndarray:
        return x * 2

    double.register_fake(lambda x: empty_like(x))
    return double


def test_inference_ops_pass_the_defaults_unchanged(dispatcher: Dispatcher) -> None:
    assert opcheck(_inference_op(dispatcher), (X,)) == dict.fromkeys(ALL, "SUCCESS")


def test_grad_true_adds_the_gradient_checks(nn: SimpleNamespace) -> None:
    assert opcheck(nn.layer_norm, (X, X[0], X[1], 1e-5), grad=True) == dict.fromkeys(
        ALL + GRAD, "SUCCESS"
    )


def test_a_missing_formula_fails_with_the_fix(dispatcher: Dispatcher) -> None:
    with pytest.raises(OpCheckError) as info:
        opcheck(_inference_op(dispatcher), (X,), grad=True)
    assert str(info.value) == (
        "opcheck(oc::double [oc.double.default]): test_autograd_registration failed: "
        "oc::double has float tensor "
        "inputs and a kernel for CompositeExplicitAutograd, but no autograd formula and no "
        "CompositeImplicitAutograd kernel, so no gradient can flow through it. Register a "
        "formula with register_autograd(backward, setup_context=...), or, for an op meant "
        "only for inference, leave out grad=True."
    )


def test_a_composite_implicit_op_needs_no_formula(
    nn: SimpleNamespace, dispatcher: Dispatcher
) -> None:
    lib = Library("occia", "DEF", dispatcher=dispatcher)
    lib.define("square(Tensor x) -> Tensor")
    lib.impl("square", lambda x: nn.mul(x, x))
    from customop.library import Ops

    square = Ops(dispatcher).occia.square.default
    result = opcheck(square, (X,), test_utils=GRAD)
    assert result == dict.fromkeys(GRAD, "SUCCESS")
    lib.close()


def test_integer_inputs_only_have_nothing_to_check(dispatcher: Dispatcher) -> None:
    @custom_op("oc::count", mutates_args=(), dispatcher=dispatcher)
    def count(x: np.ndarray) -> np.ndarray:
        return x + 1

    count.register_fake(lambda x: empty_like(x))
    assert opcheck(count, (np.arange(3),), grad=True)["test_autograd_registration"] == "SUCCESS"


def test_a_wrong_formula_fails_test_gradcheck(nn: SimpleNamespace) -> None:
    results = opcheck(nn.square_wrong, (X,), grad=True, raise_exception=False)
    assert results["test_autograd_registration"] == "SUCCESS"
    error = results["test_gradcheck"]
    assert isinstance(error, OpCheckError)
    assert str(error).startswith(
        "opcheck(nn::square_wrong [nn.square_wrong.default]): test_gradcheck failed: gradcheck: "
        "the gradient of input "
        "'x' does not match finite differences"
    )


def test_kwargs_reach_gradcheck(nn: SimpleNamespace) -> None:
    result = opcheck(nn.softmax, (X,), {"dim": 0}, test_utils="test_gradcheck")
    assert result == {"test_gradcheck": "SUCCESS"}

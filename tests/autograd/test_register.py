"""register_autograd: torch's meaning, checks before anything is registered, handles."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import customop
from customop import Library, RegistrationError, custom_op, register_autograd
from customop.autograd import AutogradFormula, formula_of
from customop.dispatch import Dispatcher


def _setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.save_for_backward(*inputs)


def _backward(ctx: Any, grad: Any) -> tuple[Any, Any]:
    x, y = ctx.saved_tensors
    return grad * y, grad * x


def _mul(dispatcher: Dispatcher) -> Any:
    @custom_op("rg::mul", mutates_args=(), dispatcher=dispatcher)
    def mul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x * y

    return mul


def test_method_returns_a_handle_and_stores_the_formula(dispatcher: Dispatcher) -> None:
    mul = _mul(dispatcher)
    handle = mul.register_autograd(_backward, setup_context=_setup)
    assert handle.source.startswith("test_register.py:")
    formula = formula_of(mul)
    assert isinstance(formula, AutogradFormula)
    assert formula.backward is _backward
    assert formula.setup_context is _setup
    assert formula.name == "rg::mul"
    assert formula.schema == mul.schema
    assert formula_of("rg::mul", dispatcher=dispatcher) is formula
    handle.remove()
    assert formula_of(mul) is None


def test_the_formula_shows_in_dump_table_on_every_autograd_key(dispatcher: Dispatcher) -> None:
    mul = _mul(dispatcher)
    handle = mul.register_autograd(_backward, setup_context=_setup)
    table = dispatcher.dump_table(mul.op.handle)
    lines = [line for line in table.splitlines() if line.startswith("Autograd")]
    assert len(lines) == 7
    assert all(f"autograd(_backward) at {handle.source} [autograd kernel]" in ln for ln in lines)


def test_free_function_for_a_library_op(dispatcher: Dispatcher) -> None:
    lib = Library("rglib", "DEF", dispatcher=dispatcher)
    lib.define("mul(Tensor x, Tensor y) -> Tensor")
    lib.impl("mul", lambda x, y: x * y, "CPU")
    handle = register_autograd("rglib::mul", _backward, dispatcher=dispatcher)
    formula = formula_of("rglib::mul", dispatcher=dispatcher)
    assert formula is not None and formula.setup_context is None
    with handle:
        pass
    assert formula_of("rglib::mul", dispatcher=dispatcher) is None
    lib.close()


def test_free_function_on_a_custom_op_is_owned_by_its_library(dispatcher: Dispatcher) -> None:
    mul = _mul(dispatcher)
    register_autograd(mul, _backward, setup_context=_setup)
    assert formula_of(mul) is not None
    _mul(dispatcher)  # a redefinition closes the old op's library, formula included
    assert formula_of("rg::mul", dispatcher=dispatcher) is None


def test_unknown_name_has_no_formula(dispatcher: Dispatcher) -> None:
    assert formula_of("rg::nothing", dispatcher=dispatcher) is None


def test_the_default_dispatcher_is_used_for_names() -> None:
    assert formula_of("rg::not_defined_anywhere") is None
    assert customop.register_autograd is register_autograd


@pytest.mark.parametrize(
    ("backward", "setup_context", "message"),
    [
        (
            lambda ctx: None,
            None,
            r"rg::mul.register_autograd: backward <lambda>\(ctx\) does not take \(ctx, grad0\) "
            r"for rg::mul\. It is called with ctx and one gradient per output \(1\)\. Give it "
            r"those parameters, or \(ctx, \*grads\)\.",
        ),
        (
            _backward,
            lambda ctx, inputs: None,
            r"setup_context <lambda>\(ctx, inputs\) does not take \(ctx, inputs, output\)",
        ),
        (
            lambda ctx, g, *, scale: None,
            None,
            r"backward <lambda>\(ctx, g, \*, scale\) does not take",
        ),
    ],
    ids=["backward-too-few", "setup-too-few", "backward-required-keyword"],
)
def test_signatures_are_checked(
    dispatcher: Dispatcher, backward: Any, setup_context: Any, message: str
) -> None:
    mul = _mul(dispatcher)
    with pytest.raises(RegistrationError, match=message):
        mul.register_autograd(backward, setup_context=setup_context)
    assert formula_of(mul) is None  # a failed registration changes nothing


@pytest.mark.parametrize(
    "backward",
    [lambda ctx, *grads: None, lambda *args: None, lambda ctx, g, extra=None: None],
    ids=["varargs-grads", "all-varargs", "optional-extra"],
)
def test_flexible_signatures_are_accepted(dispatcher: Dispatcher, backward: Any) -> None:
    mul = _mul(dispatcher)
    mul.register_autograd(backward)
    assert formula_of(mul) is not None


def test_not_callable(dispatcher: Dispatcher) -> None:
    mul = _mul(dispatcher)
    with pytest.raises(TypeError, match="backward must be a function"):
        mul.register_autograd(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="setup_context must be a function"):
        mul.register_autograd(_backward, setup_context="no")  # type: ignore[arg-type]


def test_mutable_op_is_refused(dispatcher: Dispatcher) -> None:
    @custom_op("rg::fill_", mutates_args=["x"], dispatcher=dispatcher)
    def fill_(x: np.ndarray) -> None:
        x[...] = 0

    with pytest.raises(RegistrationError, match=r"rg::fill_ mutates 'x'\. A formula maps"):
        fill_.register_autograd(lambda ctx, *grads: None)


def test_op_without_tensor_inputs_is_refused(dispatcher: Dispatcher) -> None:
    @custom_op("rg::arange", mutates_args=(), dispatcher=dispatcher)
    def arange(n: int) -> np.ndarray:
        return np.arange(n, dtype=np.float64)

    with pytest.raises(RegistrationError, match="rg::arange has no tensor inputs"):
        arange.register_autograd(lambda ctx, g: None)


def test_composite_implicit_op_is_refused(dispatcher: Dispatcher) -> None:
    lib = Library("rgcia", "DEF", dispatcher=dispatcher)
    lib.define("double(Tensor x) -> Tensor")
    lib.impl("double", lambda x: x + x)  # CompositeImplicitAutograd
    with pytest.raises(RegistrationError, match="has a CompositeImplicitAutograd kernel"):
        register_autograd("rgcia::double", lambda ctx, g: g, dispatcher=dispatcher)
    lib.close()


def test_wrong_op_argument(dispatcher: Dispatcher) -> None:
    with pytest.raises(TypeError, match="register_autograd: expected an op"):
        register_autograd(3.0, _backward, dispatcher=dispatcher)


def test_a_replaced_custom_op_refuses_formulas(dispatcher: Dispatcher) -> None:
    old = _mul(dispatcher)
    _mul(dispatcher)
    with pytest.raises(RegistrationError, match="was replaced"):
        old.register_autograd(_backward)

"""register_autograd: torch's meaning, checks before anything is registered, handles."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import customop
from customop import (
    KernelOverrideWarning,
    Library,
    RegistrationError,
    custom_op,
    register_autograd,
)
from customop.autograd import AutogradFormula, formula_of
from customop.dispatch import Dispatcher, DispatchKey


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


def test_the_formula_shows_in_dump_table_on_autograd_other(dispatcher: Dispatcher) -> None:
    mul = _mul(dispatcher)
    handle = mul.register_autograd(_backward, setup_context=_setup)
    lines = dispatcher.dump_table(mul.op.handle).splitlines()
    (other,) = [line for line in lines if line.startswith("AutogradOther:")]
    assert other.endswith(f"autograd(_backward) at {handle.source} [kernel]")
    # The per-backend keys, which every array carries, keep falling through.
    per_backend = [line for line in lines if line.startswith("Autograd") and line != other]
    assert len(per_backend) == 6
    assert all(line.endswith("[fallthrough]") for line in per_backend)


def test_calls_outside_a_transform_never_reach_the_formula(dispatcher: Dispatcher) -> None:
    mul = _mul(dispatcher)
    calls = []
    mul.register_autograd(_backward, setup_context=lambda ctx, i, o: calls.append(1))
    x = np.ones(3)
    keys = mul.op.handle.dispatch_keyset(x, x)
    assert DispatchKey.AutogradOther not in keys
    assert np.array_equal(mul(x, x), x)
    assert calls == []


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


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3)), max_size=12))
@settings(max_examples=40, deadline=None)
def test_formula_of_follows_any_sequence_of_registrations(steps: list[tuple[bool, int]]) -> None:
    dispatcher = Dispatcher()
    mul = _mul(dispatcher)
    live: list[tuple[Any, Any]] = []  # (handle, backward), oldest first
    for register, pick in steps:
        if register or not live:
            backward = (lambda ctx, g: (g, g)) if pick % 2 else (lambda ctx, *grads: None)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", KernelOverrideWarning)
                live.append((mul.register_autograd(backward), backward))
        else:
            handle, _ = live.pop(pick % len(live))
            handle.remove()
            handle.remove()  # idempotent
        formula = formula_of(mul)
        expected = live[-1][1] if live else None
        assert (formula.backward if formula else None) is expected


@pytest.mark.parametrize("form", ["torch", "customop"], ids=str)
def test_keyword_only_arguments_in_both_setup_context_forms(
    dispatcher: Dispatcher, form: str
) -> None:
    # torch calls setup_context(ctx, inputs, keyword_only_inputs, output) for an op
    # with keyword-only arguments; customop's form gets every argument in schema order.
    @custom_op("rg::scale", mutates_args=(), dispatcher=dispatcher)
    def scale(x: np.ndarray, *, by: float) -> np.ndarray:
        return x * by

    seen: list[Any] = []
    if form == "torch":

        def setup_context(ctx: Any, inputs: Any, keyword_only_inputs: Any, output: Any) -> None:
            seen.append((inputs, keyword_only_inputs))
            ctx.by = keyword_only_inputs["by"]

        def backward(ctx: Any, grad: Any) -> Any:
            return grad * ctx.by  # the positional input's gradient only, as in torch

    else:

        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:  # type: ignore[misc]
            seen.append(inputs)
            ctx.by = inputs[1]

        def backward(ctx: Any, grad: Any) -> Any:
            return grad * ctx.by, None

    scale.register_autograd(backward, setup_context=setup_context)
    assert formula_of(scale).torch_form is (form == "torch")  # type: ignore[union-attr]
    x = np.array([1.0, 2.0])
    out, vjp_fn = customop.autograd.vjp(lambda x: scale(x, by=3.0), x, dispatcher=dispatcher)
    np.testing.assert_array_equal(out, [3.0, 6.0])
    np.testing.assert_array_equal(vjp_fn(np.ones(2))[0], [3.0, 3.0])
    expected = ((x,), {"by": 3.0}) if form == "torch" else (x, 3.0)
    assert repr(seen) == repr([expected])

"""opcheck catches each kind of bug, and passes a correct op."""

from __future__ import annotations

import numpy as np
import pytest

from customop import custom_op
from customop.dispatch import Dispatcher
from customop.exceptions import OpCheckError
from customop.fake import opcheck
from customop.tensor import empty_like

X = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_a_correct_op_passes_every_check(dispatcher: Dispatcher) -> None:
    @custom_op("oc::scale", mutates_args=(), dispatcher=dispatcher)
    def scale(x: np.ndarray, k: float) -> np.ndarray:
        return x * k

    scale.register_fake(lambda x, k: empty_like(x))
    assert opcheck(scale, (X, 2.0)) == {
        "test_schema": "SUCCESS",
        "test_faketensor": "SUCCESS",
        "test_trace": "SUCCESS",
    }


def test_declared_mutation_is_fine(dispatcher: Dispatcher) -> None:
    @custom_op("oc::fill_", mutates_args=["x"], dispatcher=dispatcher)
    def fill_(x: np.ndarray) -> None:
        x[...] = 0

    assert opcheck(fill_, (X.copy(),), checks=["test_schema"]) == {"test_schema": "SUCCESS"}


def test_undeclared_mutation(dispatcher: Dispatcher) -> None:
    @custom_op("oc::sneaky", mutates_args=(), dispatcher=dispatcher)
    def sneaky(x: np.ndarray) -> np.ndarray:
        x += 1
        return x.copy()

    with pytest.raises(
        OpCheckError, match=r"test_schema failed: oc::sneaky: argument 'x' was mutated"
    ):
        opcheck(sneaky, (X.copy(),), checks=["test_schema"])


def test_output_aliasing_an_input(dispatcher: Dispatcher) -> None:
    @custom_op("oc::alias", mutates_args=(), dispatcher=dispatcher)
    def alias(x: np.ndarray) -> np.ndarray:
        return x

    with pytest.raises(OpCheckError, match="an output aliases input 'x'"):
        opcheck(alias, (X,), checks=["test_schema"])


def test_fake_impl_with_the_wrong_shape(dispatcher: Dispatcher) -> None:
    @custom_op("oc::total", mutates_args=(), dispatcher=dispatcher)
    def total(x: np.ndarray) -> np.ndarray:
        return x.sum(0)

    total.register_fake(lambda x: empty_like(x))
    with pytest.raises(OpCheckError) as excinfo:
        opcheck(total, (X,), checks=["test_faketensor"])
    assert str(excinfo.value) == (
        "opcheck(oc::total [oc.total.default]): test_faketensor failed: output 0 of the fake "
        "impl has shape (2, 3) but the kernel's is (3,) (Shapes (3,) and (2, 3) are not equal!)"
        ". Fix the fake impl (registered with register_fake) to compute the kernel's metadata."
    )


def test_fake_impl_with_the_wrong_dtype(dispatcher: Dispatcher) -> None:
    @custom_op("oc::as_int", mutates_args=(), dispatcher=dispatcher)
    def as_int(x: np.ndarray) -> np.ndarray:
        return x.astype(np.int64)

    as_int.register_fake(lambda x: empty_like(x))
    with pytest.raises(OpCheckError, match="dtype float32 but the kernel's is int64"):
        opcheck(as_int, (X,), checks=["test_faketensor"])


def test_missing_fake_impl(dispatcher: Dispatcher) -> None:
    @custom_op("oc::nofake", mutates_args=(), dispatcher=dispatcher)
    def nofake(x: np.ndarray) -> np.ndarray:
        return x * 2

    with pytest.raises(OpCheckError, match="test_faketensor failed: oc::nofake: no fake kernel"):
        opcheck(nofake, (X,))


def test_hidden_state_breaks_the_trace_check(dispatcher: Dispatcher) -> None:
    calls = []

    @custom_op("oc::counter", mutates_args=(), dispatcher=dispatcher)
    def counter(x: np.ndarray) -> np.ndarray:
        calls.append(1)
        return x + len(calls)

    counter.register_fake(lambda x: empty_like(x))
    with pytest.raises(OpCheckError, match="re-running the traced graph gave a different result"):
        opcheck(counter, (X,), checks=["test_trace"])


def test_unknown_check_name(dispatcher: Dispatcher) -> None:
    @custom_op("oc::ok", mutates_args=(), dispatcher=dispatcher)
    def ok(x: np.ndarray) -> np.ndarray:
        return x.copy()

    with pytest.raises(ValueError, match="unknown check 'test_autograd'"):
        opcheck(ok, (X,), checks=["test_autograd"])

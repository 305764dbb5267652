"""debug_checks(): undeclared mutation and output aliasing, off the hot path."""

from __future__ import annotations

import numpy as np
import pytest

from customop import Tensor
from customop.dispatch import Dispatcher
from customop.library import DebugCheckError, custom_op, debug_checks


def test_undeclared_mutation_is_caught(dispatcher: Dispatcher) -> None:
    @custom_op("dbg::sneaky", mutates_args=(), dispatcher=dispatcher)
    def sneaky(x: np.ndarray) -> np.ndarray:
        x += 1
        return x.copy()

    sneaky(np.zeros(2))  # unchecked: nothing notices
    with debug_checks(), pytest.raises(DebugCheckError) as excinfo:
        sneaky(np.zeros(2))
    assert str(excinfo.value) == (
        "dbg::sneaky: argument 'x' was mutated, but the schema does not declare it (Argument "
        "x is not defined as mutable but was mutated). Callers and tracing assume unannotated "
        "inputs are unchanged. Annotate it as written, e.g. Tensor(a!) x (mutates_args=['x']), "
        "or copy it in the kernel."
    )


def test_output_aliasing_an_input_is_caught(dispatcher: Dispatcher) -> None:
    @custom_op("dbg::view", mutates_args=(), dispatcher=dispatcher)
    def view(x: np.ndarray) -> np.ndarray:
        return x[:1]

    with debug_checks(), pytest.raises(DebugCheckError, match="an output aliases input 'x'"):
        view(np.zeros(2))


def test_declared_mutation_and_clean_ops_pass(dispatcher: Dispatcher) -> None:
    @custom_op("dbg::fill_", mutates_args=["x"], dispatcher=dispatcher)
    def fill_(x: np.ndarray) -> None:
        x[...] = 1

    @custom_op("dbg::double", mutates_args=(), dispatcher=dispatcher)
    def double(x: Tensor) -> Tensor:
        return np.asarray(x) * 2

    x = np.zeros(2)
    with debug_checks():
        fill_(x)
        np.testing.assert_array_equal(double(x), [2.0, 2.0])
        fill_(np.zeros(1))  # a declared mutation that happens is fine; so is one that doesn't
    np.testing.assert_array_equal(x, [1.0, 1.0])


def test_checks_end_with_the_block(dispatcher: Dispatcher) -> None:
    @custom_op("dbg::alias", mutates_args=(), dispatcher=dispatcher)
    def alias(x: np.ndarray) -> np.ndarray:
        return x

    x = np.zeros(1)
    with debug_checks(), pytest.raises(DebugCheckError):
        alias(x)
    assert alias(x) is x

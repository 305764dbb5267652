"""A FakeTensor has no data: reading a value or computing on it says so, naming the op."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import customop
from customop import custom_op
from customop.dispatch import Dispatcher
from customop.tensor import DataDependentError, FakeTensor, install_backends
from customop.trace import trace


@pytest.fixture
def dispatcher() -> Dispatcher:
    d = Dispatcher()
    install_backends(d)
    return d


@pytest.mark.parametrize(
    ("read", "what"),
    [
        (lambda x: int(x[0]), "int()"),
        (lambda x: float(x[0]), "float()"),
        (lambda x: range(x[0]), "operator.index()"),
        (lambda x: x[0].item(), ".item()"),
        (lambda x: x.tolist(), ".tolist()"),
        (lambda x: bool(x[0]), "bool()"),
    ],
    ids=["int", "float", "index", "item", "tolist", "bool"],
)
def test_a_fake_impl_that_reads_data_names_the_op(
    dispatcher: Dispatcher, read: Any, what: str
) -> None:
    @custom_op("fd::first", mutates_args=(), dispatcher=dispatcher)
    def first(x: np.ndarray) -> np.ndarray:
        return np.zeros(int(x[0]))

    first.register_fake(lambda x: customop.empty((read(x),)))
    with pytest.raises(DataDependentError) as info:
        trace(first, np.ones(3), dispatcher=dispatcher)
    message = str(info.value)
    assert message.startswith(f"fd::first: its fake impl read a value of a FakeTensor ({what} ")
    assert message.endswith(
        "A fake has a shape, a dtype and a device but no values, so a fake impl cannot depend "
        "on them. For an output size that depends on the data, take a new symbolic size: "
        "customop.empty((customop.get_ctx().new_dynamic_size(),))."
    )


def test_reading_a_fake_outside_a_fake_impl() -> None:
    with pytest.raises(DataDependentError, match=r"^FakeTensor: int\(\) of FakeTensor\(shape"):
        int(FakeTensor((), "float64"))


@pytest.mark.parametrize(
    ("compute", "what"),
    [
        (lambda x: np.add(x, 1), "numpy.add"),
        (lambda x: np.sum(x), "numpy.sum"),
        (lambda x: x + 1, r"the \+ operator"),
        (lambda x: 2 * x, r"the \* operator"),
        (lambda x: np.ones(3) - x, "numpy.subtract"),
        (lambda x: -x, "the unary - operator"),
    ],
    ids=["np-add", "np-sum", "plus", "times", "ndarray-minus", "negate"],
)
def test_plain_code_on_traced_values_says_trace_records_op_calls(
    dispatcher: Dispatcher, compute: Any, what: str
) -> None:
    @custom_op("fd::neg", mutates_args=(), dispatcher=dispatcher)
    def neg(x: np.ndarray) -> np.ndarray:
        return -x

    neg.register_fake(lambda x: customop.empty_like(x))
    with pytest.raises(TypeError) as info:
        trace(lambda x: neg(compute(x)), np.ones(3), dispatcher=dispatcher)
    assert re.match(f"FakeTensor: {what} on a FakeTensor", str(info.value))
    assert str(info.value).endswith(
        "A fake has no data, so plain array code cannot compute with it: trace records op "
        "calls, and a fake impl computes output metadata. In a traced function, make the "
        "computation an op (a custom_op with a fake impl); in a fake impl, make the output "
        "with customop.empty_like or x.new_empty."
    )

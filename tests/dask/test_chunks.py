"""Under debug_checks, every computed chunk is checked against the op's fake impl."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import customop
from customop import DebugCheckError
from customop.dispatch import Dispatcher

da = pytest.importorskip("dask.array")


def _liar(dispatcher: Dispatcher, fake: Any) -> Any:
    @customop.custom_op("dklie::half", mutates_args=(), tags=("pointwise",), dispatcher=dispatcher)
    def half(x: np.ndarray) -> np.ndarray:
        return (x // 2).astype(np.int64)

    half.register_fake(fake)
    return half


@pytest.mark.parametrize(
    ("fake", "message"),
    [
        (
            lambda x: customop.empty_like(x),
            "dklie::half on dask arrays: a computed chunk has dtype int64 and shape (2,), but "
            "the op's fake impl gives dtype float64 and shape (2,) for the same input chunks. "
            "The lazy array's dtype and chunk sizes come from the fake impl, so the array "
            "would describe its chunks wrongly. Make the fake impl and the kernel agree.",
        ),
        (
            lambda x: customop.empty((x.shape[0] + 1,), dtype=customop.int64),
            "dklie::half on dask arrays: a computed chunk has dtype int64 and shape (2,), but "
            "the op's fake impl gives dtype int64 and shape (3,) for the same input chunks. "
            "The lazy array's dtype and chunk sizes come from the fake impl, so the array "
            "would describe its chunks wrongly. Make the fake impl and the kernel agree.",
        ),
    ],
    ids=["dtype", "shape"],
)
def test_a_fake_that_lies_fails_at_compute_under_debug_checks(
    dispatcher: Dispatcher, fake: Any, message: str
) -> None:
    half = _liar(dispatcher, fake)
    x = da.arange(4, chunks=2).astype(np.float64)
    with customop.debug_checks():
        result = half(x)
    with pytest.raises(DebugCheckError) as info:
        result.compute()
    assert str(info.value) == message


def test_outside_debug_checks_the_fake_is_trusted(dispatcher: Dispatcher) -> None:
    half = _liar(dispatcher, lambda x: customop.empty_like(x))
    result = half(da.arange(4, chunks=2).astype(np.float64))
    assert result.dtype == np.float64  # what the fake says
    assert result.compute().dtype == np.int64  # what the kernel made: not checked


def test_a_fake_that_tells_the_truth_passes(dispatcher: Dispatcher) -> None:
    half = _liar(dispatcher, lambda x: customop.empty_like(x, dtype=customop.int64))
    with customop.debug_checks():
        result = half(da.arange(5, chunks=2).astype(np.float64))
    np.testing.assert_array_equal(result.compute(), [0, 0, 1, 1, 2])


def test_debug_checks_leave_the_graph_lazy(dispatcher: Dispatcher) -> None:
    calls: list[int] = []

    @customop.custom_op("dklazy::neg", mutates_args=(), tags=("pointwise",), dispatcher=dispatcher)
    def neg(x: np.ndarray) -> np.ndarray:
        calls.append(x.size)
        return -x

    neg.register_fake(lambda x: customop.empty_like(x))
    with customop.debug_checks():
        result = neg(da.ones(4, chunks=2))
    assert calls == []  # the call's own debug checks did not compute the dask arrays
    np.testing.assert_array_equal(result.compute(), -np.ones(4))
    assert calls == [2, 2]

"""opcheck's torch spellings and options: test_utils=, raise_exception=, atol/rtol, dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import customop
from customop import custom_op
from customop.dispatch import Dispatcher
from customop.exceptions import OpCheckError
from customop.fake import opcheck
from customop.tensor import empty_like

X = np.arange(6, dtype=np.float32).reshape(2, 3)


@pytest.mark.parametrize(
    "dtype",
    [np.float16, np.dtype("float16"), customop.tensor.float16],
    ids=["np.float16", "np.dtype", "customop.float16"],
)
def test_a_dtype_argument(dispatcher: Dispatcher, dtype: object) -> None:
    @custom_op("oo::cast", mutates_args=(), dispatcher=dispatcher)
    def cast(x: np.ndarray, dtype: customop.tensor.dtype) -> np.ndarray:
        return x.astype(np.float16)

    cast.register_fake(lambda x, dtype: empty_like(x, dtype=dtype))
    assert opcheck(cast, (X, dtype)) == dict.fromkeys(
        ("test_schema", "test_faketensor", "test_trace"), "SUCCESS"
    )


def test_numpy_scalars_are_not_arrays(dispatcher: Dispatcher) -> None:
    @custom_op("oo::scale", mutates_args=(), dispatcher=dispatcher)
    def scale(x: np.ndarray, k: float) -> np.ndarray:
        return x * k

    scale.register_fake(lambda x, k: empty_like(x))
    assert opcheck(scale, (X, np.float32(2.0)))["test_trace"] == "SUCCESS"


def _noisy(dispatcher: Dispatcher) -> object:
    state = [0.0]

    @custom_op("oo::noisy", mutates_args=(), dispatcher=dispatcher)
    def noisy(x: np.ndarray) -> np.ndarray:
        state[0] += 1e-7  # rounding that differs from run to run
        return x + state[0]

    noisy.register_fake(lambda x: empty_like(x))
    return noisy


def test_test_utils_is_torchs_spelling_of_checks(dispatcher: Dispatcher) -> None:
    noisy = _noisy(dispatcher)
    assert opcheck(noisy, (X,), test_utils="test_schema") == {"test_schema": "SUCCESS"}
    assert opcheck(noisy, (X,), test_utils=("test_faketensor",)) == {"test_faketensor": "SUCCESS"}
    with pytest.raises(TypeError, match="both checks= and test_utils= were given"):
        opcheck(noisy, (X,), checks=["test_schema"], test_utils=["test_schema"])


def test_trace_tolerances(dispatcher: Dispatcher) -> None:
    noisy = _noisy(dispatcher)
    with pytest.raises(OpCheckError, match="gave a different result from calling the op"):
        opcheck(noisy, (X,), checks=["test_trace"])
    assert opcheck(noisy, (X,), checks=["test_trace"], atol=1e-5) == {"test_trace": "SUCCESS"}
    with pytest.raises(OpCheckError, match=r"\(beyond atol=1e-09, rtol=1e-09\)"):
        opcheck(noisy, (X,), checks=["test_trace"], atol=1e-9, rtol=1e-9)


def test_raise_exception_false_returns_the_errors(dispatcher: Dispatcher) -> None:
    @custom_op("oo::nofake", mutates_args=(), dispatcher=dispatcher)
    def nofake(x: np.ndarray) -> np.ndarray:
        return x * 2

    results = opcheck(nofake, (X,), raise_exception=False)
    assert results["test_schema"] == "SUCCESS"
    assert isinstance(results["test_faketensor"], OpCheckError)
    assert "no fake kernel" in str(results["test_faketensor"])
    assert isinstance(results["test_trace"], OpCheckError)

"""TensorMeta: from arrays and duck-typed fakes, symbolic sizes, dtype names."""

from __future__ import annotations

import numpy as np
import pytest

from customop.trace import TensorMeta, meta_of
from tests.trace.conftest import DuckArray, Sym


class TorchLikeDtype:
    """Prints like torch.float16 and has no .name."""

    def __str__(self) -> str:
        return "torch.float16"


class CudaDevice:
    type = "cuda"

    def __str__(self) -> str:
        return "cuda:1"


def test_from_a_numpy_array() -> None:
    meta = TensorMeta.from_value(np.zeros((2, 3), np.int32))
    assert (meta.shape, meta.dtype, meta.device) == ((2, 3), "int32", "cpu")
    assert str(meta) == "i32[2, 3]"
    assert repr(meta) == "TensorMeta(shape=(2, 3), dtype='int32', device='cpu')"
    assert meta.rank == 2 and meta.short_dtype == "i32"


def test_from_a_duck_typed_fake_with_symbolic_sizes() -> None:
    s0 = Sym("s0")
    fake = DuckArray((s0, Sym("2*s0 + 1"), np.int64(4), Sym("7")), TorchLikeDtype(), CudaDevice())
    meta = TensorMeta.from_value(fake)
    assert meta.shape == ("s0", "2*s0 + 1", 4, 7)
    assert meta.sizes[0] is s0
    assert (meta.dtype, meta.device) == ("float16", "cuda:1")
    assert str(meta) == "f16[s0, 2*s0 + 1, 4, 7]@cuda:1"


@pytest.mark.parametrize(
    ("dtype", "name"),
    [
        pytest.param(np.float32, "float32", id="numpy-type"),
        pytest.param(np.dtype("f8"), "float64", id="numpy-dtype"),
        pytest.param(np.dtype(bool), "bool", id="bool"),
        pytest.param("f32", "float32", id="short-name"),
        pytest.param("bfloat16", "bfloat16", id="name"),
        pytest.param(TorchLikeDtype(), "float16", id="torch-like"),
    ],
)
def test_dtype_names(dtype: object, name: str) -> None:
    assert TensorMeta((), dtype).dtype == name


def test_equality_ignores_live_sizes() -> None:
    a = TensorMeta((Sym("s0"), 3), "float32")
    b = TensorMeta(("s0", 3), np.float32, "cpu")
    assert a == b and hash(a) == hash(b)
    assert a != TensorMeta(("s0", 3), "float32", "cuda:0")
    assert a != "f32[s0, 3]"


def test_meta_of_results() -> None:
    x = np.zeros(2, np.float32)
    assert meta_of(x) == TensorMeta((2,), "float32")
    assert meta_of((x, 3, np.float32(1))) == (TensorMeta((2,), "float32"), None, None)
    assert meta_of([x]) == (TensorMeta((2,), "float32"),)
    assert meta_of(3) is None


def test_from_value_refuses_non_tensors() -> None:
    with pytest.raises(TypeError) as excinfo:
        TensorMeta.from_value(3)
    assert str(excinfo.value) == (
        "TensorMeta.from_value: expected a tensor, got int 3. Only arrays (objects with "
        ".shape and .dtype) have tensor metadata. Pass an array, or record None as the "
        "metadata of a non-tensor value."
    )

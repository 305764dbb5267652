"""dtype: names, ScalarType codes, numpy and torch mappings, conversions, errors."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from customop.schema import infer_schema
from customop.schema._defaults import SCALAR_TYPE_CODES
from customop.tensor import (
    Tensor,
    bfloat16,
    bool_,
    complex64,
    dtype,
    dtype_from_code,
    float16,
    float32,
    float64,
    int8,
    int32,
    int64,
    uint8,
)
from customop.tensor._dtype import DTYPES


@pytest.mark.parametrize(
    ("element", "name", "code", "numpy"),
    [
        pytest.param(uint8, "uint8", 0, np.uint8, id="uint8"),
        pytest.param(int8, "int8", 1, np.int8, id="int8"),
        pytest.param(int32, "int32", 3, np.int32, id="int32"),
        pytest.param(int64, "int64", 4, np.int64, id="int64"),
        pytest.param(float16, "float16", 5, np.float16, id="float16"),
        pytest.param(float32, "float32", 6, np.float32, id="float32"),
        pytest.param(float64, "float64", 7, np.float64, id="float64"),
        pytest.param(complex64, "complex64", 9, np.complex64, id="complex64"),
        pytest.param(bool_, "bool", 11, np.bool_, id="bool"),
    ],
)
def test_name_code_and_numpy(element: dtype, name: str, code: int, numpy: type) -> None:
    assert (element.name, element.code, element.numpy) == (name, code, np.dtype(numpy))
    assert str(element) == name
    assert dtype_from_code(code) is element
    assert dtype.from_code(code) is element
    assert dtype.from_any(name) is element
    assert dtype.from_any(numpy) is element
    assert dtype.from_any(np.dtype(numpy)) is element


def test_every_scalar_type_code_has_a_dtype() -> None:
    for name, code in SCALAR_TYPE_CODES.items():
        assert dtype_from_code(code) is DTYPES[name]
        assert DTYPES[name].code == code


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("long", int64, id="torch-alias-long"),
        pytest.param("float", float32, id="torch-alias-float"),
        pytest.param("double", float64, id="torch-alias-double"),
        pytest.param("half", float16, id="torch-alias-half"),
        pytest.param("bool_", bool_, id="numpy-spelling"),
        pytest.param("torch.int32", int32, id="torch-prefix"),
        pytest.param(float, float64, id="python-float"),
        pytest.param(bool, bool_, id="python-bool"),
        pytest.param(np.dtype(">f4"), float32, id="big-endian"),
        pytest.param(int64, int64, id="itself"),
    ],
)
def test_from_any(value: object, expected: dtype) -> None:
    assert dtype.from_any(value) is expected


def test_repr_and_flags() -> None:
    assert repr(float32) == "customop.float32"
    assert repr(bool_) == "customop.bool_"
    assert float16.is_floating_point and bfloat16.is_floating_point
    assert not int64.is_floating_point
    assert complex64.is_complex and not float32.is_complex


def test_singletons_survive_copy_and_pickle() -> None:
    assert copy.copy(float32) is float32
    assert copy.deepcopy(float32) is float32
    assert pickle.loads(pickle.dumps(int64)) is int64


def test_equality_with_numpy_and_hash() -> None:
    assert float32 == np.float32
    assert float32 == np.dtype("float32")
    assert np.dtype("float32") == float32  # numpy reads the .dtype attribute
    assert float32 != np.float64
    assert float32 != "float32"  # names differ between torch and numpy: not compared
    assert float32 != 3
    assert len({float32, dtype.from_any("float"), int64}) == 2


def test_numpy_accepts_customop_dtypes() -> None:
    assert np.empty(2, dtype=int32).dtype == np.int32  # type: ignore[call-overload]
    assert np.zeros(2).astype(bool_).dtype == np.bool_  # type: ignore[arg-type]


def test_types_numpy_lacks() -> None:
    message = (
        "dtype.numpy: bfloat16 has no numpy dtype. numpy has no such element type, so numpy "
        "arrays cannot hold it. Use a torch tensor for it, or convert to a type numpy has, "
        "such as float32."
    )
    with pytest.raises(TypeError) as info:
        _ = bfloat16.numpy
    assert str(info.value) == message
    assert bfloat16.code == 15


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        pytest.param(
            "floaty",
            ValueError,
            "dtype.from_any: 'floaty' is not a dtype name. Names follow torch (ScalarType names "
            "and aliases such as 'long'). Use e.g. 'float32', 'int64', 'bool' or 'long'.",
            id="unknown-name",
        ),
        pytest.param(
            np.dtype("O"),
            TypeError,
            "dtype.from_any: numpy dtype 'object' has no customop dtype. customop's element "
            "types are torch's ScalarTypes, and this one is not among them. Convert the array "
            "to a numeric or bool dtype first.",
            id="numpy-object",
        ),
        pytest.param(
            None,
            TypeError,
            "dtype.from_any: None (NoneType) is not a dtype customop knows. An element type "
            "must have a torch ScalarType. Pass a customop dtype, a numpy dtype or scalar type, "
            "a torch.dtype, or a name such as 'float32'.",
            id="none",
        ),
    ],
)
def test_from_any_errors(value: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        dtype.from_any(value)
    assert str(info.value) == message


@pytest.mark.parametrize("code", [-1, 46, True, "6"], ids=["negative", "too-big", "bool", "str"])
def test_from_code_errors(code: object) -> None:
    message = (
        f"dtype.from_code: {code!r} is not a ScalarType code. Codes index torch's ScalarType "
        "enum, 0 to 45. Pass an int such as 6 (float32)."
    )
    with pytest.raises(ValueError) as info:
        dtype_from_code(code)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_not_constructible() -> None:
    with pytest.raises(TypeError, match=r"^dtype: dtypes are not constructed\."):
        dtype()


def test_infers_as_scalar_type_with_its_code() -> None:
    def f(x: Tensor, kind: dtype = int64) -> Tensor:
        return x

    schema = infer_schema(f, mutates_args=())
    assert format(schema, "source") == "(Tensor x, ScalarType kind=int64) -> Tensor"
    assert str(schema) == "(Tensor x, ScalarType kind=4) -> Tensor"
    default = schema.arguments[1].default
    assert default is not None
    assert dtype_from_code(default.value) is int64  # type: ignore[arg-type]


def test_torch_dtypes() -> None:
    torch = pytest.importorskip("torch")
    assert dtype.from_any(torch.float32) is float32
    assert dtype.from_any(torch.bool) is bool_
    assert dtype.from_any(torch.bfloat16) is bfloat16
    assert float32 == torch.float32
    assert bfloat16.to_torch() is torch.bfloat16
    for name, code in SCALAR_TYPE_CODES.items():
        torch_dtype = getattr(torch, DTYPES[name].name, None)
        if torch_dtype is not None:
            assert dtype.from_any(torch_dtype).code == code

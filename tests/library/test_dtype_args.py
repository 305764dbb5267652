"""ScalarType arguments reach kernels as the kind of dtype their tensors carry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import customop
from customop.dispatch import Dispatcher
from customop.library import Library, Ops, custom_op, register_fake
from customop.library._dtype_args import canonical_dtypes, dtype_argument_indices
from customop.schema import parse_schema
from customop.tensor import install_backends

SPELLINGS = [np.float16, np.dtype("float16"), "float16", "half", customop.float16]
IDS = ["np-type", "np-dtype", "name", "alias", "customop"]


@pytest.fixture
def dispatcher() -> Iterator[Dispatcher]:
    d = Dispatcher()
    with install_backends(d):
        yield d


@pytest.fixture
def cast(dispatcher: Dispatcher) -> Iterator[list[Any]]:
    """``dt::cast(Tensor x, ScalarType dtype, *, ScalarType? acc=None)``; yields what it got."""
    seen: list[Any] = []

    def kernel(x: Any, dtype: Any, *, acc: Any = None) -> Any:
        seen.append((dtype, acc))
        return x.astype(dtype)

    def fake(x: Any, dtype: Any, *, acc: Any = None) -> Any:
        seen.append((dtype, acc))
        return customop.empty_like(x, dtype=dtype)

    with Library("dt", "DEF", dispatcher=dispatcher) as lib:
        lib.define("cast(Tensor x, ScalarType dtype, *, ScalarType? acc=None) -> Tensor")
        lib.impl("cast", kernel, "CPU")
        register_fake("dt::cast", fake, dispatcher=dispatcher)
        yield seen


@pytest.mark.parametrize("spelling", SPELLINGS, ids=IDS)
def test_numpy_kernels_get_numpy_dtypes(ops: Ops, cast: list[Any], spelling: Any) -> None:
    out = ops.dt.cast(np.ones(2, dtype=np.float32), spelling, acc=spelling)
    assert out.dtype == np.float16
    assert cast == [(np.dtype("float16"), np.dtype("float16"))]
    assert all(type(d) is type(np.dtype("float16")) for d in cast[0])


@pytest.mark.parametrize("spelling", SPELLINGS, ids=IDS)
def test_fake_impls_get_customop_dtypes(ops: Ops, cast: list[Any], spelling: Any) -> None:
    with customop.FakeTensorMode() as mode:
        out = ops.dt.cast(mode.from_real(np.ones(2, dtype=np.float32)), spelling)
    assert out.dtype is customop.float16
    assert cast == [(customop.float16, None)]


def test_positional_names_by_keyword_are_converted(ops: Ops, cast: list[Any]) -> None:
    handle = ops.dt.cast.default.handle  # the raw handle passes keywords through as given
    out = handle(np.ones(1, dtype=np.float32), dtype="float64")
    assert out.dtype == np.float64
    assert cast == [(np.dtype("float64"), None)]


def test_torch_tensors_get_torch_dtypes(dispatcher: Dispatcher) -> None:
    torch = pytest.importorskip("torch")
    seen: list[Any] = []

    @custom_op("dt::tcast", mutates_args=(), dispatcher=dispatcher)
    def tcast(x: customop.Tensor, dtype: customop.dtype) -> customop.Tensor:
        seen.append(dtype)
        return x.to(dtype)  # type: ignore[attr-defined,no-any-return]

    for spelling in (np.float16, "float16", torch.float16, customop.float16):
        assert tcast(torch.ones(2), spelling).dtype == torch.float16
    assert seen == [torch.float16] * 4


def test_an_op_without_tensors_gets_customop_dtypes(dispatcher: Dispatcher) -> None:
    @custom_op("dt::zeros", mutates_args=(), dispatcher=dispatcher)
    def zeros(n: int, dtype: customop.dtype) -> np.ndarray:
        assert dtype is customop.int32
        return np.zeros(n, dtype=dtype)

    for spelling in (np.int32, "int32", customop.int32):
        assert zeros(3, spelling).dtype == np.int32


def test_a_default_dtype_reaches_the_kernel_converted(dispatcher: Dispatcher) -> None:
    @custom_op("dt::astype", mutates_args=(), dispatcher=dispatcher)
    def astype(x: np.ndarray, dtype: customop.dtype = customop.int64) -> np.ndarray:
        assert type(dtype) is type(np.dtype("int64"))
        return x.astype(dtype)

    assert astype(np.ones(1)).dtype == np.int64


def test_ops_without_scalar_type_keep_their_kernel_as_is() -> None:
    def kernel(x: Any) -> Any:
        return x

    schema = parse_schema("t::f(Tensor x, int n) -> Tensor")
    assert dtype_argument_indices(schema) == ()
    assert canonical_dtypes(kernel, schema) is kernel
    wrapped = canonical_dtypes(kernel, parse_schema("t::g(Tensor x, ScalarType? d) -> Tensor"))
    assert wrapped is not kernel
    assert wrapped.__wrapped__ is kernel  # type: ignore[attr-defined]


def test_an_unknown_dtype_name_is_a_type_error_at_the_call(ops: Ops, cast: list[Any]) -> None:
    with pytest.raises(TypeError, match=r"argument 'dtype' \(position 1\) expects ScalarType"):
        ops.dt.cast(np.ones(1), "floaty")
    assert cast == []

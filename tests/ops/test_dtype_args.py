"""ScalarType arguments reach kernels as the kind of dtype their tensors carry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import customop
from customop.dispatch import Dispatcher
from customop.library import Library, Ops, custom_op, register_fake
from customop.ops._dtype_args import canonical_dtypes, dtype_argument_indices
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

    def kernel(x: Any, dtype: Any) -> Any:  # not annotated as a dtype: the tensors' kind
        seen.append(dtype)
        return x.to(dtype)

    with Library("dt", "DEF", dispatcher=dispatcher) as lib:
        lib.define("tcast(Tensor x, ScalarType dtype) -> Tensor")
        lib.impl("tcast", kernel, "CPU")
        for spelling in (np.float16, "float16", torch.float16, customop.float16):
            assert Ops(dispatcher).dt.tcast(torch.ones(2), spelling).dtype == torch.float16
    assert seen == [torch.float16] * 4


def test_an_op_without_tensors_gets_customop_dtypes(dispatcher: Dispatcher) -> None:
    seen: list[Any] = []
    with Library("dt", "DEF", dispatcher=dispatcher) as lib:
        lib.define("zeros(int n, ScalarType dtype) -> Tensor")
        lib.impl("zeros", lambda n, dtype: seen.append(dtype) or np.zeros(n, dtype=dtype), "CPU")
        for spelling in (np.int32, "int32", customop.int32):
            assert Ops(dispatcher).dt.zeros(3, spelling).dtype == np.int32
    assert seen == [customop.int32] * 3
    assert all(d is customop.int32 for d in seen)


@pytest.mark.parametrize(
    ("annotation", "default", "kind"),
    [
        (customop.dtype, customop.int64, customop.dtype),
        (np.dtype, np.dtype("int64"), type(np.dtype("int64"))),
        (customop.dtype | None, customop.int64, customop.dtype),
    ],
    ids=["customop", "numpy", "optional"],
)
def test_an_annotated_parameter_gets_its_annotated_kind(
    dispatcher: Dispatcher, annotation: Any, default: Any, kind: type
) -> None:
    seen: list[Any] = []

    def astype(x: np.ndarray, dtype: Any = default) -> np.ndarray:
        seen.append(dtype)
        return x.astype(dtype)

    def fake(x: np.ndarray, dtype: Any = default) -> Any:
        seen.append(dtype)
        return customop.empty_like(x, dtype=dtype)

    astype.__annotations__["dtype"] = fake.__annotations__["dtype"] = annotation
    op = custom_op("dt::astype", astype, mutates_args=(), dispatcher=dispatcher)
    op.register_fake(fake)
    for spelling in (np.int64, "long", customop.int64):
        assert op(np.ones(1), spelling).dtype == np.int64
    assert op(np.ones(1)).dtype == np.int64  # the default, too
    with customop.FakeTensorMode() as mode:
        assert op(mode.from_real(np.ones(1)), np.int64).dtype == customop.int64
    assert [type(d) for d in seen] == [kind] * 5


def test_a_torch_dtype_annotation_gives_torch_dtypes(dispatcher: Dispatcher) -> None:
    torch = pytest.importorskip("torch")

    def torch_kind(x: np.ndarray, dtype: Any) -> np.ndarray:
        assert dtype is torch.float64
        return x.astype(np.float64)

    torch_kind.__annotations__["dtype"] = torch.dtype  # local import: set by hand
    op = custom_op("dt::torch_kind", torch_kind, mutates_args=(), dispatcher=dispatcher)
    assert op(np.ones(1), np.float64).dtype == np.float64


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


@pytest.mark.parametrize("spelling", SPELLINGS, ids=IDS)
def test_repeated_calls_keep_each_kind(dispatcher: Dispatcher, spelling: Any) -> None:
    """The cached fast path (one ScalarType after a Tensor) gives each call its own kind."""
    seen: list[Any] = []

    def kernel(x: Any, dtype: Any) -> Any:
        seen.append(dtype)
        return customop.empty_like(x, dtype=dtype) if isinstance(x, customop.FakeTensor) else x

    with Library("dt", "DEF", dispatcher=dispatcher) as lib:
        lib.define("keep(Tensor x, ScalarType dtype) -> Tensor")
        lib.impl("keep", kernel, "CPU")
        lib.impl("keep", kernel, "Fake")
        keep = Ops(dispatcher).dt.keep
        with customop.FakeTensorMode() as mode:
            fake = mode.from_real(np.ones(1))
        for x in (np.ones(1), np.ones(1), fake, fake, np.ones(1)):
            keep(x, spelling)
    numpy_kind = type(np.dtype("float16"))
    kinds = [numpy_kind, numpy_kind, customop.dtype, customop.dtype, numpy_kind]
    assert [type(d) for d in seen] == kinds
    assert all(d == np.float16 for d in seen)

"""bitsandbytes' registrations (``bitsandbytes/_ops.py``, ``backends/*/ops.py``), ported.

The original defines each op at module level with ``torch.library.define``,
then registers fakes and kernels with free decorators bound to short names::

    register_fake = torch.library.register_fake
    register_kernel = torch.library.register_kernel

    torch.library.define("bitsandbytes::int8_linear_matmul", "(Tensor A, Tensor B) -> Tensor")

    @register_fake("bitsandbytes::int8_linear_matmul")
    def _(A: torch.Tensor, B: torch.Tensor): ...

    @register_kernel("bitsandbytes::int8_linear_matmul", "cpu")
    def _(A: torch.Tensor, B: torch.Tensor): ...

The port is the same code with ``torch.library`` renamed to ``customop`` and
numpy kernels (written by us). ``torch._check`` becomes a plain raise here.
"""

# The ported code keeps the originals' names and signatures (A, B, splitK, many
# positional parameters), so that it reads as the code it restates.
# ruff: noqa: N803, N806

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np
import pytest

import customop
from customop import Tensor
from tests.ports._harness import check, run_every_way

register_fake = customop.register_fake
register_kernel = customop.register_kernel

# -- int8 matmul, and its out= overload ------------------------------------------------

customop.define("bitsandbytes::int8_linear_matmul", "(Tensor A, Tensor B) -> Tensor")


@register_fake("bitsandbytes::int8_linear_matmul")
def _(A: Tensor, B: Tensor) -> Tensor:
    if A.dtype != np.int8 or B.dtype != np.int8:
        raise TypeError("A and B must be int8")
    shapeC = (*A.shape[:-1], B.shape[0])
    return customop.empty(shapeC, device=A.device, dtype=customop.int32)


@register_kernel("bitsandbytes::int8_linear_matmul", "cpu")
def _(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return np.matmul(A.astype(np.int32), B.astype(np.int32).T)


customop.define("bitsandbytes::int8_linear_matmul.out", "(Tensor A, Tensor B, Tensor! out) -> ()")


@register_fake("bitsandbytes::int8_linear_matmul.out")
def _(A: Tensor, B: Tensor, out: Tensor) -> None:
    shapeC = (*A.shape[:-1], B.shape[0])
    if tuple(out.shape) != shapeC:
        raise ValueError(f"Expected out.shape == {shapeC}, got {out.shape}")


@register_kernel("bitsandbytes::int8_linear_matmul.out", "cpu")
def _(A: np.ndarray, B: np.ndarray, out: np.ndarray) -> None:
    out[...] = np.matmul(A.astype(np.int32), B.astype(np.int32).T)


# -- vectorwise quantisation: a data-dependent output ------------------------------------

customop.define(
    "bitsandbytes::int8_vectorwise_quant",
    "(Tensor A, float threshold=0.0) -> (Tensor, Tensor, Tensor?)",
)


@register_fake("bitsandbytes::int8_vectorwise_quant")
def _(A: Tensor, threshold: float = 0.0) -> Any:
    out_row = customop.empty(A.shape, device=A.device, dtype=customop.int8)
    row_stats = customop.empty((prod(A.shape[:-1]),), device=A.device, dtype=customop.float32)
    if threshold == 0.0:
        return out_row, row_stats, None
    outlier_cols = customop.get_ctx().new_dynamic_size()
    return out_row, row_stats, customop.new_empty(A, (outlier_cols,), dtype=customop.int64)


@register_kernel("bitsandbytes::int8_vectorwise_quant", "cpu")
def _(A: np.ndarray, threshold: float = 0.0) -> Any:
    outliers = None
    if threshold > 0.0:
        columns = np.abs(A.reshape(-1, A.shape[-1])) >= threshold
        outliers = np.flatnonzero(columns.any(axis=0)).astype(np.int64)
        A = A.copy()
        A[..., outliers] = 0
    row_stats = np.abs(A).max(axis=-1).reshape(-1).astype(np.float32)
    scale = (127.0 / row_stats).reshape((*A.shape[:-1], 1))
    return np.round(A * scale).astype(np.int8), row_stats, outliers


# -- dequantisation with a "default" (every device) kernel -------------------------------

customop.define("bitsandbytes::int8_vectorwise_dequant", "(Tensor A, Tensor stats) -> Tensor")


@register_fake("bitsandbytes::int8_vectorwise_dequant")
def _(A: Tensor, stats: Tensor) -> Tensor:
    return customop.empty_like(A, dtype=customop.float32)


@register_kernel("bitsandbytes::int8_vectorwise_dequant", "default")
def _(A: np.ndarray, stats: np.ndarray) -> np.ndarray:
    # To dequantize we divide by 127, or multiply by the reciprocal (as the original).
    return (A * stats.reshape(-1, 1) * np.float32(7.874015718698502e-3)).astype(np.float32)


# -- a ScalarType argument -----------------------------------------------------------------

customop.define(
    "bitsandbytes::dequantize_blockwise",
    "(Tensor A, Tensor absmax, Tensor code, int blocksize, ScalarType dtype) -> Tensor",
)


fake_received: list[Any] = []


@register_fake("bitsandbytes::dequantize_blockwise")
def _(A: Tensor, absmax: Tensor, code: Tensor, blocksize: int, dtype: Any) -> Tensor:
    fake_received.append(dtype)
    if A.dtype != np.uint8:
        raise TypeError(f"A must be uint8, got {A.dtype}")
    return customop.empty_like(A, dtype=dtype)


received: list[Any] = []


@register_kernel("bitsandbytes::dequantize_blockwise", "cpu")
def _(A: np.ndarray, absmax: np.ndarray, code: np.ndarray, blocksize: int, dtype: Any) -> Any:
    received.append(dtype)
    scales = np.repeat(absmax, blocksize)[: A.size].reshape(A.shape)
    return (code[A.astype(np.intp)] * scales).astype(dtype)


# -- the tests -----------------------------------------------------------------------------

ops = customop.ops.bitsandbytes
rng = np.random.default_rng(0)
A8 = rng.integers(-127, 128, size=(3, 4), dtype=np.int8)
B8 = rng.integers(-127, 128, size=(5, 4), dtype=np.int8)


def test_int8_linear_matmul_runs_every_way() -> None:
    out = run_every_way(ops.int8_linear_matmul.default, (A8, B8))
    np.testing.assert_array_equal(out, A8.astype(np.int32) @ B8.astype(np.int32).T)


def test_the_out_overload_writes_its_out_argument() -> None:
    out = np.zeros((3, 5), dtype=np.int32)
    assert ops.int8_linear_matmul.out(A8, B8, out) is None
    np.testing.assert_array_equal(out, ops.int8_linear_matmul(A8, B8))
    run_every_way(ops.int8_linear_matmul.out, (A8, B8, np.zeros((3, 5), dtype=np.int32)))


@pytest.mark.parametrize("threshold", [0.0, 2.5], ids=["no-outliers", "outliers"])
def test_int8_vectorwise_quant_runs_every_way(threshold: float) -> None:
    A = np.array([[1.0, -3.0, 0.5], [2.0, 0.25, -1.0]], dtype=np.float32)
    out_row, row_stats, outliers = run_every_way(ops.int8_vectorwise_quant.default, (A, threshold))
    assert out_row.dtype == np.int8
    assert (outliers is None) == (threshold == 0.0)
    if outliers is not None:
        np.testing.assert_array_equal(outliers, [1])
    np.testing.assert_array_equal(row_stats, [1.0, 2.0] if threshold else [3.0, 2.0])


def test_the_default_device_type_is_composite_explicit_autograd() -> None:
    entry = customop.dispatcher.table_entry("bitsandbytes::int8_vectorwise_dequant", "CPU")
    assert entry.reason == "default backend kernel"
    stats = np.array([127.0, 254.0], dtype=np.float32)
    out = run_every_way(ops.int8_vectorwise_dequant.default, (A8[:2], stats))
    np.testing.assert_allclose(out, A8[:2] * np.array([[1.0], [2.0]]), rtol=1e-6)


def _blockwise_args() -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    A = np.array([[0, 1, 2], [3, 1, 0]], dtype=np.uint8)
    code = np.array([0.0, 0.5, -1.0, 1.0], dtype=np.float32)
    absmax = np.array([2.0, 4.0], dtype=np.float32)
    return A, absmax, code, 4


SPELLINGS = [np.float16, np.dtype("float16"), "float16", customop.float16]


@pytest.mark.parametrize("dtype", SPELLINGS, ids=["np-type", "np-dtype", "name", "customop"])
def test_every_dtype_spelling_reaches_the_numpy_kernel_as_a_numpy_dtype(dtype: Any) -> None:
    received.clear()
    args = (*_blockwise_args(), dtype)
    out = run_every_way(ops.dequantize_blockwise.default, args, opcheck=False)
    assert out.dtype == np.float16
    assert received
    assert all(type(d) is type(np.dtype("float16")) and d == np.float16 for d in received)
    np.testing.assert_array_equal(out, np.array([[0, 1, -2], [2, 2, 0]], dtype=np.float16))


@pytest.mark.parametrize(
    "dtype",
    [
        pytest.param(np.float16, id="np-type"),
        pytest.param(np.dtype("float16"), id="np-dtype"),
        pytest.param("float16", id="name"),
        pytest.param(customop.float16, id="customop"),
    ],
)
def test_opcheck_passes_with_every_dtype_spelling(dtype: Any) -> None:
    check(ops.dequantize_blockwise.default, (*_blockwise_args(), dtype))


def test_a_torch_dtype_reaches_the_numpy_kernel_as_a_numpy_dtype() -> None:
    torch = pytest.importorskip("torch")
    received.clear()
    out = ops.dequantize_blockwise(*_blockwise_args(), torch.float16)
    assert out.dtype == np.float16
    assert received == [np.dtype("float16")]
    assert type(received[0]) is type(np.dtype("float16"))


@pytest.mark.parametrize("dtype", SPELLINGS, ids=["np-type", "np-dtype", "name", "customop"])
def test_fakes_get_customop_dtypes(dtype: Any) -> None:
    fake_received.clear()
    with customop.FakeTensorMode() as mode:
        A, absmax, code, blocksize = (
            mode.from_real(a) if isinstance(a, np.ndarray) else a for a in _blockwise_args()
        )
        out = ops.dequantize_blockwise(A, absmax, code, blocksize, dtype)
    assert out.dtype is customop.float16
    assert fake_received == [customop.float16]
    assert fake_received[0] is customop.float16

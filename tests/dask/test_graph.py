"""customop ops on dask arrays: lazy graphs, one task per output chunk, values as numpy's."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import customop
from customop.dispatch import Dispatcher
from tests.dask.conftest import Ops

da = pytest.importorskip("dask.array")

RNG = np.random.default_rng(0)
A = RNG.random((8, 6))
B = RNG.random((6, 4))


def _layer(result: Any) -> dict[Any, Any]:
    """The tasks of the result's own graph layer."""
    return dict(result.dask.layers[result.name])


def test_pointwise_maps_chunk_by_chunk(ops: Ops) -> None:
    x = da.from_array(A, chunks=(2, 3))
    result = ops.scale(x, x, 2.0)
    assert isinstance(result, da.Array)
    assert result.chunks == x.chunks
    assert len(_layer(result)) == x.npartitions
    np.testing.assert_allclose(result.compute(), A * A * 2.0)


def test_no_kernel_runs_before_compute(ops: Ops) -> None:
    x = da.from_array(A, chunks=(2, 2))
    result = ops.softmax(ops.matmul(x, da.from_array(B, chunks=2)))
    assert ops.calls == []
    result.compute()
    assert set(ops.calls) == {"matmul", "softmax"}


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (da.from_array(A, chunks=(4, 2)), da.from_array(A, chunks=(2, 3))),
        (da.from_array(A, chunks=(4, 2)), A[:1]),
        (da.from_array(A, chunks=(4, 2)), da.from_array(A[0], chunks=4)),
        (A, da.from_array(A[:, :1], chunks=(3, 1))),
    ],
    ids=["unified-chunks", "numpy-row", "dask-vector", "numpy-left"],
)
def test_pointwise_broadcasts_and_unifies_chunks(ops: Ops, left: Any, right: Any) -> None:
    result = ops.scale(left, right, alpha=3.0)
    assert isinstance(result, da.Array)
    expected = np.asarray(left) * np.asarray(right) * 3.0
    np.testing.assert_allclose(result.compute(), expected)


def test_contraction_sums_partial_products(ops: Ops) -> None:
    x, w = da.from_array(A, chunks=(2, 2)), da.from_array(B, chunks=(2, 2))
    result = ops.matmul(x, w)
    assert result.chunks == ((2, 2, 2, 2), (2, 2))
    # Three chunks along j: two combine tasks per output chunk (a pairwise tree).
    assert len(_layer(result)) == 2 * result.npartitions
    np.testing.assert_allclose(result.compute(), A @ B)


@pytest.mark.parametrize("kind", ["callable", "op"], ids=["callable", "customop-op"])
def test_contraction_with_combine(dispatcher: Dispatcher, kind: str) -> None:
    @customop.custom_op("dk::maxplus", mutates_args=(), dispatcher=dispatcher)
    def maxplus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a[:, :, None] + b[None, :, :]).max(axis=1)  # type: ignore[no-any-return]

    @maxplus.register_fake
    def _(a: Any, b: Any) -> Any:
        return customop.empty((a.shape[0], b.shape[1]), dtype=a.dtype)

    @customop.custom_op("dk::maximum", mutates_args=(), dispatcher=dispatcher)
    def maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.maximum(a, b)

    maxplus.register_blockwise("ij,jk->ik", combine=np.maximum if kind == "callable" else maximum)
    result = maxplus(da.from_array(A, chunks=(3, 2)), da.from_array(B, chunks=(2, 3)))
    np.testing.assert_allclose(result.compute(), maxplus(A, B))


def test_whole_dimension_is_rechunked_and_named(ops: Ops) -> None:
    x = da.from_array(A, chunks=(2, 2))
    result = ops.softmax(x)
    assert "-rechunked-J-" in result.name
    assert result.chunks == ((2, 2, 2, 2), (6,))
    np.testing.assert_allclose(result.compute(), ops.softmax(A))


def test_reduction_over_contracted_index(ops: Ops) -> None:
    x = da.from_array(A, chunks=(1, 3))
    result = ops.total(x)
    assert result.chunks == ((3, 3),)
    np.testing.assert_allclose(result.compute(), A.sum(axis=0))


def test_data_dependent_size_gives_nan_chunks(ops: Ops) -> None:
    values = np.arange(-5.0, 7.0)
    result = ops.positive(da.from_array(values, chunks=3))
    assert all(math.isnan(size) for size in result.chunks[0])
    np.testing.assert_array_equal(result.compute(), values[values > 0])


def test_unknown_sizes_flow_into_the_next_op(ops: Ops) -> None:
    values = np.arange(-5.0, 7.0)
    kept = ops.positive(da.from_array(values, chunks=3))
    result = ops.scale(kept, kept, 0.5)
    assert all(math.isnan(size) for size in result.chunks[0])
    np.testing.assert_allclose(result.compute(), values[values > 0] ** 2 * 0.5)


def test_op_without_tag_or_rule_names_both_fixes(ops: Ops) -> None:
    with pytest.raises(customop.MissingKernelError) as caught:
        ops.plain(da.from_array(A, chunks=2))
    message = str(caught.value)
    assert message.startswith("dk::plain on dask arrays: the op has neither")
    for fix in ("tags=('pointwise',)", "register_blockwise", "options(whole=True)"):
        assert fix in message


def test_whole_option_runs_one_task_on_one_chunk(ops: Ops) -> None:
    x = da.from_array(A, chunks=(2, 2))
    with customop.dask.options(whole=True) as current:
        assert current.whole
        result = ops.plain(x)
    assert "-whole-" in result.name
    assert len(_layer(result)) == 1
    assert result.chunks == ((48,),)
    np.testing.assert_array_equal(result.compute(), np.sort(A, axis=None))
    with customop.dask.options() as outside:
        assert not outside.whole


def test_mixing_numpy_and_dask_for_a_rule(ops: Ops) -> None:
    result = ops.matmul(da.from_array(A, chunks=(2, 3)), B)
    np.testing.assert_allclose(result.compute(), A @ B)


def test_rank_that_does_not_fit_the_rule(ops: Ops) -> None:
    with pytest.raises(ValueError, match=r"dk::softmax on dask arrays: an argument has 3"):
        ops.softmax(da.ones((2, 2, 2), chunks=1))


def test_numpy_calls_are_unchanged(ops: Ops) -> None:
    np.testing.assert_allclose(ops.matmul(A, B), A @ B)
    assert ops.calls == ["matmul"]


def test_traced_graph_runs_lazily_on_dask_arrays(ops: Ops, dispatcher: Dispatcher) -> None:
    def model(x: Any, w: Any) -> Any:
        return ops.total(ops.softmax(ops.matmul(x, w)))

    graph = customop.trace(model, A, B, dispatcher=dispatcher)
    result = graph(da.from_array(A, chunks=(2, 3)), da.from_array(B, chunks=(3, 2)))
    assert isinstance(result, da.Array)
    assert ops.calls == []
    np.testing.assert_allclose(result.compute(), graph(A, B))


def test_a_dask_kernel_on_the_op_beats_the_fallback(ops: Ops) -> None:
    handle = customop.handle_of(ops.plain.register_kernel("dask", lambda x: "own"))
    try:
        assert ops.plain(da.ones(4, chunks=2)) == "own"
    finally:
        handle.remove()


def test_full_reduction_is_a_tree_of_pairwise_combines(dispatcher: Dispatcher) -> None:
    @customop.custom_op("dk::total_all", mutates_args=(), dispatcher=dispatcher)
    def total_all(x: np.ndarray) -> np.ndarray:
        return np.asarray(x.sum())

    @total_all.register_fake
    def _(x: Any) -> Any:
        return customop.empty((), dtype=x.dtype)

    total_all.register_blockwise("ij->")
    values = RNG.random((9, 7))
    result = total_all(da.from_array(values, chunks=(2, 3)))  # 5 x 3 = 15 partial sums
    assert result.shape == ()
    assert len(_layer(result)) == 14  # 15 partials need 14 pairwise merges
    np.testing.assert_allclose(result.compute(), values.sum())


def test_mutating_ops_are_refused(dispatcher: Dispatcher) -> None:
    @customop.custom_op("dk::fill", mutates_args=("x",), tags=("pointwise",), dispatcher=dispatcher)
    def fill(x: np.ndarray) -> None:
        x[...] = 0

    with pytest.raises(
        ValueError, match=r"dk::fill on dask arrays: the op writes to its argument 'x'"
    ):
        fill(da.ones(4, chunks=2))

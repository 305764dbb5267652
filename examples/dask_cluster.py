"""Run a traced model of custom ops on a chunked Dask array, on a local cluster.

    python examples/dask_cluster.py [ROWS]

Starts a LocalCluster of two worker processes, traces a small model on numpy
arrays, runs the same graph on a chunked dask array (lazily: one task per
chunk), and computes it on the cluster with a progress bar. The workers find
the ops by running this script's top level (the ops are defined there), which
is why the cluster code sits under ``if __name__ == "__main__":``.
"""

# requires: dask, distributed
# slow: starting two worker processes takes several seconds

from __future__ import annotations

import sys
from typing import Any

import dask.array as da
import numpy as np
from distributed import Client, LocalCluster, progress

import customop
from customop import custom_op, empty, empty_like


@custom_op("dkexample::matmul", mutates_args=())
def matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return x @ w


@matmul.register_fake
def _matmul(x: Any, w: Any) -> Any:
    return empty((x.shape[0], w.shape[1]), dtype=x.dtype)


matmul.register_blockwise("ij,jk->ik")  # j is contracted: partial products are summed


@custom_op("dkexample::bias_relu", mutates_args=(), tags=("pointwise",))
def bias_relu(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(x + b, 0)


@bias_relu.register_fake
def _bias_relu(x: Any, b: Any) -> Any:
    return empty_like(x)


@custom_op("dkexample::softmax", mutates_args=())
def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    result: np.ndarray = e / e.sum(axis=-1, keepdims=True)
    return result


@softmax.register_fake
def _softmax(x: Any) -> Any:
    return empty_like(x)


softmax.register_blockwise("iJ->iJ")  # J whole: each row's chunks are joined first


@custom_op("dkexample::row_max", mutates_args=())
def row_max(x: np.ndarray) -> np.ndarray:
    return x.max(axis=-1)


@row_max.register_fake
def _row_max(x: Any) -> Any:
    return empty((x.shape[0],), dtype=x.dtype)


row_max.register_blockwise("iJ->i")


def model(x: Any, w: Any, b: Any) -> Any:
    return row_max(softmax(bias_relu(matmul(x, w), b)))


def main(rows: int) -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 16)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    # The number of rows is symbolic (s0), so the graph runs on any number of rows.
    rows_any = customop.FakeTensorMode().from_real(np.zeros((8, 64), np.float32), dynamic=(0,))
    graph = customop.trace(model, rows_any, w, b)
    print(graph)

    x = rng.random((rows, 64), dtype=np.float32)
    chunked = da.from_array(x, chunks=(rows // 8, 32))  # 16 chunks
    lazy = graph(chunked, w, b)
    print(f"lazy result: {lazy!r}, {len(lazy.__dask_graph__())} tasks")

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address="127.0.0.1:0"
        ) as cluster,
        Client(cluster) as client,
    ):
        print(f"dashboard: {client.dashboard_link}")
        future = client.compute(lazy)
        progress(future)
        result = future.result()
        print()
    np.testing.assert_allclose(result, model(x, w, b), rtol=1e-5)
    print(f"{rows} rows on 2 workers match numpy; first row maxima: {np.round(result[:3], 4)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)

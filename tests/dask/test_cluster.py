"""A LocalCluster of two worker processes runs a customop pipeline; workers find the ops."""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import customop
from customop.dask._ref import OpRef
from tests.dask import cluster_ops

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow  # starting two worker processes takes ~10 s here
SHUTDOWN_LIMIT = 20.0  # seconds


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",  # a free port: parallel runs must not collide on 8787
    )
    client = distributed.Client(cluster)
    yield client
    start = time.perf_counter()
    client.close(timeout=SHUTDOWN_LIMIT)
    cluster.close(timeout=SHUTDOWN_LIMIT)
    elapsed = time.perf_counter() - start
    assert elapsed < SHUTDOWN_LIMIT, f"the cluster took {elapsed:.1f} s to shut down"
    assert cluster.status.name == "closed"


def test_pipeline_runs_on_two_worker_processes(client: Any) -> None:
    rng = np.random.default_rng(1)
    x, w = rng.random((32, 12)), rng.random((12, 6))
    dx = da.from_array(x, chunks=(4, 6))  # 16 chunks
    dw = da.from_array(w, chunks=(6, 3))
    assert dx.npartitions >= 16
    result = cluster_ops.pipeline(dx, dw)
    future = client.compute(result)
    np.testing.assert_allclose(future.result(), cluster_ops.pipeline(x, w))
    pids = client.run(lambda: __import__("os").getpid())
    assert len(set(pids.values())) == 2


def test_a_traced_graph_runs_on_the_cluster(client: Any) -> None:
    x, w = np.ones((16, 8)), np.full((8, 4), 0.25)
    graph = customop.trace(cluster_ops.pipeline, x, w)
    lazy = graph(da.from_array(x, chunks=(2, 4)), da.from_array(w, chunks=(4, 2)))
    np.testing.assert_allclose(client.compute(lazy).result(), graph(x, w))


def test_an_op_missing_on_workers_names_the_op_and_module(client: Any) -> None:
    ref = OpRef(None, "dkcluster::nowhere", "customop_no_such_module", "")
    future = client.submit(pickle.loads(pickle.dumps(ref)), np.ones(2), pure=False)
    with pytest.raises(customop.UnknownOperatorError) as caught:
        future.result()
    message = str(caught.value)
    assert "'dkcluster::nowhere'" in message
    assert "module 'customop_no_such_module'" in message

"""A task holds the op's definition as its graph was built: a redefinition changes no old graph."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import customop
from customop.dispatch import Dispatcher

da = pytest.importorskip("dask.array")


def _define(dispatcher: Dispatcher, k: float) -> Any:
    @customop.custom_op("dkref::scale", mutates_args=(), tags=("pointwise",), dispatcher=dispatcher)
    def scale(x: np.ndarray) -> np.ndarray:
        return x * k

    scale.register_fake(lambda x: customop.empty_like(x))
    return scale


def test_graphs_of_two_definitions_of_one_name_keep_their_own_bodies(
    dispatcher: Dispatcher,
) -> None:
    x = da.arange(4, chunks=2).astype(np.float64)
    a = _define(dispatcher, 2.0)(x)
    b = _define(dispatcher, 10.0)(x)  # the same name, redefined: a was built before
    assert a.name != b.name  # task keys name the definition, so the graphs never share tasks
    np.testing.assert_array_equal((a + b).compute(), [0.0, 12.0, 24.0, 36.0])
    np.testing.assert_array_equal(a.compute(), [0.0, 2.0, 4.0, 6.0])


def test_graphs_of_one_definition_share_their_tasks(dispatcher: Dispatcher) -> None:
    scale = _define(dispatcher, 2.0)
    x = da.arange(4, chunks=2).astype(np.float64)
    assert scale(x).name == scale(x).name  # dask's own deduplication still works


def test_a_graph_keeps_computing_after_its_op_is_removed(dispatcher: Dispatcher) -> None:
    lib = customop.Library("dkgone", "DEF", dispatcher=dispatcher)
    lib.define("triple(Tensor x) -> Tensor", tags=("pointwise",))
    lib.impl("triple", lambda x: x * 3, "CPU")
    customop.register_fake(
        "dkgone::triple", lambda x: customop.empty_like(x), dispatcher=dispatcher
    )
    result = dispatcher.find_schema_or_throw("dkgone::triple")(da.arange(4, chunks=2) * 1.0)
    lib.close()
    np.testing.assert_array_equal(result.compute(), [0.0, 3.0, 6.0, 9.0])

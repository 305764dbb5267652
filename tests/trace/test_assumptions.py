"""A traced graph keeps what ``customop.check`` assumed, checks it on every run, and saves it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from customop import FakeTensor, check, custom_op, trace
from customop.dispatch import Dispatcher
from customop.tensor import ShapeEnv, install_backends
from customop.trace import Graph, GraphError


@pytest.fixture
def pair(dispatcher: Dispatcher) -> Iterator[Any]:
    with install_backends(dispatcher):

        @custom_op("assume::pair", mutates_args=(), dispatcher=dispatcher)
        def pair(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            return x[: len(y)] + y

        @pair.register_fake
        def _(x: Any, y: Any) -> Any:
            # torchao's nms fake does this: a hand-written check on two sizes.
            check(x.shape[0] == y.shape[0], "x and y need the same number of rows")
            check(x.shape[0] < 100)
            return x.new_empty(x.shape)

        yield pair


def traced(pair: Any, dispatcher: Dispatcher) -> Graph:
    env = ShapeEnv()
    s0, s1 = env.new_symint(), env.new_symint()
    x, y = FakeTensor((s0, 4)), FakeTensor((s1, 4))
    return trace(lambda x, y: pair(x, y), x, y, dispatcher=dispatcher)


def ones(rows: int) -> np.ndarray:
    return np.ones((rows, 4), dtype=np.float32)


def test_trace_keeps_the_assumptions(pair: Any, dispatcher: Dispatcher) -> None:
    graph = traced(pair, dispatcher)
    assert graph.assumptions == ("s0 == s1", "s0 < 100")
    assert str(graph).splitlines()[:3] == [
        "def forward(x: f32[s0, 4], y: f32[s1, 4]):",
        "    # assumes s0 == s1",
        "    # assumes s0 < 100",
    ]


def test_runs_that_keep_the_assumptions_work(pair: Any, dispatcher: Dispatcher) -> None:
    graph = traced(pair, dispatcher)
    np.testing.assert_array_equal(graph(ones(3), ones(3)), 2 * ones(3))


@pytest.mark.parametrize(
    ("rows", "broken", "values"),
    [((2, 3), "s0 == s1", "s0 = 2, s1 = 3"), ((120, 120), "s0 < 100", "s0 = 120, s1 = 120")],
    ids=["equality", "bound"],
)
def test_runs_that_break_one_raise_naming_it(
    pair: Any, dispatcher: Dispatcher, rows: tuple[int, int], broken: str, values: str
) -> None:
    graph = traced(pair, dispatcher)
    with pytest.raises(GraphError) as info:
        graph(ones(rows[0]), ones(rows[1]))
    assert str(info.value) == (
        f"Graph.run: the inputs break the assumption {broken} (with {values}). The graph was "
        "traced under it: a fake impl required it with customop.check, and the recorded ops "
        "rely on it. Pass inputs whose sizes satisfy it."
    )


def test_json_round_trips_the_assumptions(pair: Any, dispatcher: Dispatcher) -> None:
    graph = traced(pair, dispatcher)
    loaded = Graph.from_json(graph.to_json(), dispatcher=dispatcher)
    assert loaded.assumptions == graph.assumptions
    with pytest.raises(GraphError, match="break the assumption s0 == s1"):
        loaded(ones(2), ones(3))


def test_a_graph_without_assumptions_saves_none(dispatcher: Dispatcher) -> None:
    graph = Graph()
    graph.output(graph.placeholder("x"))
    assert "assumptions" not in graph.to_json()


def test_static_traces_assume_nothing(pair: Any, dispatcher: Dispatcher) -> None:
    graph = trace(lambda x, y: pair(x, y), ones(3), ones(3), dispatcher=dispatcher)
    assert graph.assumptions == ()


def test_assumptions_on_unbound_symbols_are_not_checked() -> None:
    graph = Graph()
    graph.output(graph.placeholder("x"))
    graph.assume("s7 > 3")
    assert graph.run(5) == 5


@pytest.mark.parametrize("text", ["s0 + 1", "import os", "s0 ==", "f(s0) == 1 and"])
def test_assume_refuses_what_is_not_a_condition(text: str) -> None:
    with pytest.raises(GraphError, match="is not a condition on sizes"):
        Graph().assume(text)


def test_facts_known_before_the_trace_are_kept(pair: Any, dispatcher: Dispatcher) -> None:
    env = ShapeEnv()
    s0, s1 = env.new_symint(), env.new_symint()
    check(s0 == s1)  # the fake impl's check is then decided, and records nothing new
    x, y = FakeTensor((s0, 4)), FakeTensor((s1, 4))
    graph = trace(lambda x, y: pair(x, y), x, y, dispatcher=dispatcher)
    assert graph.assumptions == ("s0 < 100", "s0 == s1")
    with pytest.raises(GraphError, match="break the assumption s0 == s1"):
        graph(ones(2), ones(3))


def test_tracing_twice_with_the_same_symbols_keeps_the_assumptions(
    pair: Any, dispatcher: Dispatcher
) -> None:
    env = ShapeEnv()
    x, y = FakeTensor((env.new_symint(), 4)), FakeTensor((env.new_symint(), 4))
    first = trace(lambda x, y: pair(x, y), x, y, dispatcher=dispatcher)
    second = trace(lambda x, y: pair(x, y), x, y, dispatcher=dispatcher)
    assert set(second.assumptions) == set(first.assumptions) == {"s0 == s1", "s0 < 100"}

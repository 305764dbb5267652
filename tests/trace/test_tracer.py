"""trace(): record a pipeline of custom ops on fakes, re-run it on real data."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from customop import custom_op
from customop.dispatch import Dispatcher
from customop.tensor import empty_like, install_backends
from customop.trace import Graph
from customop.trace._tracer import trace


@pytest.fixture
def dispatcher() -> Dispatcher:
    d = Dispatcher()
    install_backends(d)
    return d


def _unary(d: Dispatcher, name: str, body: object) -> object:
    op = custom_op(
        f"tr::{name}", body, mutates_args=(), schema="(Tensor x) -> Tensor", dispatcher=d
    )  # type: ignore[arg-type]
    op.register_fake(lambda x: empty_like(x))
    return op


def test_a_pipeline_of_ten_ops_reruns_to_the_same_values(dispatcher: Dispatcher) -> None:
    ops = [
        _unary(dispatcher, name, body)
        for name, body in [
            ("neg", np.negative), ("exp", np.exp), ("tanh", np.tanh), ("sq", np.square),
            ("abs", np.abs), ("sqrt", np.sqrt), ("log1p", np.log1p), ("sin", np.sin),
            ("cos", np.cos), ("relu", lambda x: np.maximum(x, 0)),
        ]
    ]  # fmt: skip

    @custom_op("tr::add", mutates_args=(), dispatcher=dispatcher)
    def add(x: np.ndarray, y: np.ndarray, alpha: float = 1.0) -> np.ndarray:
        return x + alpha * y

    add.register_fake(lambda x, y, alpha=1.0: empty_like(x))

    def pipeline(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
        value = x
        for op in ops:
            value = op(value)  # type: ignore[operator]
        return {"out": add(value, y, 0.5), "side": ops[0](y)}  # type: ignore[operator]

    x = np.linspace(-1, 1, 12, dtype=np.float64).reshape(3, 4)
    y = np.full((3, 4), 2.0)
    graph = trace(pipeline, x, y, dispatcher=dispatcher)
    assert isinstance(graph, Graph)
    assert len([n for n in graph.nodes if n.kind.name == "CALL"]) == 12
    expected = pipeline(x, y)
    got = graph.run(x * 3, y, dispatcher=dispatcher)
    again = pipeline(x * 3, y)
    np.testing.assert_allclose(got["out"], again["out"])
    np.testing.assert_allclose(graph.run(x, y, dispatcher=dispatcher)["side"], expected["side"])
    text = str(graph)
    assert text.splitlines()[0] == "def forward(x: f64[3, 4], y: f64[3, 4]):"
    assert "add = ops.tr.add.default(relu, y, 0.5)" in text
    assert Graph.from_json(graph.to_json(), dispatcher=dispatcher).code() == graph.code()


def test_missing_fake_impl_is_the_fake_mode_error(dispatcher: Dispatcher) -> None:
    @custom_op("tr::nofake", mutates_args=(), dispatcher=dispatcher)
    def nofake(x: np.ndarray) -> np.ndarray:
        return x

    with pytest.raises(NotImplementedError, match=r"Register one with customop\.register_fake"):
        trace(lambda x: nofake(x), np.ones(2), dispatcher=dispatcher)


def test_wrong_rank_on_rerun(dispatcher: Dispatcher) -> None:
    neg = _unary(dispatcher, "neg2", np.negative)
    graph = trace(lambda x: neg(x), np.ones((2, 2)), dispatcher=dispatcher)  # type: ignore[operator]
    with pytest.raises(ValueError, match="rank"):
        graph.run(np.ones(3), dispatcher=dispatcher)


@pytest.mark.parametrize(
    ("fake", "output"),
    [
        (lambda x: np.zeros(x.shape), "output 0 is numpy.ndarray"),
        (lambda x: (empty_like(x), np.zeros(3)), "output 1 is numpy.ndarray"),
    ],
    ids=["one", "second-of-two"],
)
def test_a_fake_impl_returning_a_real_array_is_refused(
    dispatcher: Dispatcher, fake: object, output: str
) -> None:
    @custom_op("tr::liar", mutates_args=(), dispatcher=dispatcher)
    def liar(x: np.ndarray) -> np.ndarray:
        return -x

    liar.register_fake(fake)
    with pytest.raises(TypeError) as info:
        trace(lambda x: liar(x), np.ones(3), dispatcher=dispatcher)
    assert str(info.value) == (
        f"trace: 'tr::liar' computed a real array under the trace: {output}, not a "
        "FakeTensor. A trace runs ops on fakes (shape, dtype and device, no data), and a real "
        "array would be recorded as if it were one. Make the op's fake impl return fakes, "
        "e.g. customop.empty_like(x) or x.new_empty(shape)."
    )


def test_traces_in_threads_on_one_fresh_dispatcher() -> None:
    errors: list[BaseException] = []
    graphs: list[Graph] = []

    def round_of(threads: int) -> None:
        fresh = Dispatcher()  # the first trace on a dispatcher installs its Tracer fallback
        install_backends(fresh)
        neg = _unary(fresh, "tneg", np.negative)
        start = threading.Barrier(threads)

        def work() -> None:
            start.wait()
            try:
                graphs.append(trace(lambda x: neg(x), np.ones(2), dispatcher=fresh))  # type: ignore[operator]
            except BaseException as error:  # collected for the assertion below
                errors.append(error)

        pool = [threading.Thread(target=work) for _ in range(threads)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(10):
            round_of(4)
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert len(graphs) == 40 and all(len(g.nodes) == 3 for g in graphs)

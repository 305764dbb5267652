"""Running a graph: same values as calling the ops directly; clear errors for bad inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from customop.dispatch import Dispatcher
from customop.exceptions import UnknownOperatorError
from customop.library import Library, Ops
from customop.trace import Constant, Graph, GraphError, TensorMeta
from tests.trace.conftest import Recorder, Sym


def direct(op: Any, *args: Any, **kwargs: Any) -> Any:
    return op(*args, **kwargs)


def pipeline(ops: Ops, call: Any, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> Any:
    """Fourteen op calls over the "pipe" namespace, with every kind of argument.

    ``call(op, *args, **kwargs)`` runs each op: `direct`, or a `Recorder`.
    """
    pipe = ops.pipe
    h = call(pipe.matmul.default, x, w)
    h = call(pipe.add.default, h, b)
    h = call(pipe.relu.default, h)
    h = call(pipe.scale.default, h, factor=0.5)
    h = call(pipe.add.Scalar, h, 1)
    p = call(pipe.softmax.default, h, 1)
    values, indices = call(pipe.topk.default, p, 2)
    total = call(pipe.sum.default, values, [1], True)
    halves = call(pipe.split.default, h, 2)
    joined = call(pipe.concat.default, [halves[1], halves[0]], 0)
    flat = call(pipe.reshape.default, joined, [-1])
    clipped = call(pipe.clip.default, flat, 0.0, None)
    wide = call(pipe.cast.default, clipped, np.float64)
    t = call(pipe.transpose.default, p)
    return {"probs": t, "top": (values, indices), "out": [wide, total], "k": 2}


def _inputs(rows: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, 3)).astype(np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    return x, w, b


def _record(pipe: Ops) -> Graph:
    graph = Graph()
    rec = Recorder(graph)
    x, w, b = _inputs(6)
    rec.output(pipeline(pipe, rec, rec.input("x", x), rec.input("w", w), rec.input("b", b)))
    return graph


def _assert_same(got: Any, want: Any) -> None:
    assert type(got) is type(want)
    if isinstance(want, dict):
        assert list(got) == list(want)
        for key in want:
            _assert_same(got[key], want[key])
    elif isinstance(want, tuple | list):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w)
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    else:
        assert got == want


def test_pipeline_rerun_gives_the_direct_results(pipe: Ops) -> None:
    graph = _record(pipe)
    graph.lint()
    assert sum(1 for n in graph.nodes if n.kind.value == "call") == 14
    for seed in range(3):
        inputs = _inputs(6, seed)
        _assert_same(graph(*inputs), pipeline(pipe, direct, *inputs))


def test_pipeline_survives_json_and_runs_the_same(pipe: Ops, dispatcher: Dispatcher) -> None:
    loaded = Graph.from_json(_record(pipe).to_json(), dispatcher=dispatcher)
    inputs = _inputs(6, seed=7)
    _assert_same(loaded(*inputs), pipeline(pipe, direct, *inputs))


def test_run_with_an_explicit_dispatcher_looks_ops_up_by_name(pipe: Ops) -> None:
    graph = _record(pipe)
    other = Dispatcher()
    with Library("pipe", "DEF", dispatcher=other) as lib:
        lib.define("matmul(Tensor x, Tensor w) -> Tensor")
        lib.impl("matmul", lambda x, w: x @ w, "CPU")
        with pytest.raises(UnknownOperatorError) as excinfo:
            graph.run(*_inputs(6), dispatcher=other)
    message = str(excinfo.value)
    assert message.startswith("Graph.run: operators 'pipe::add' (node 'add'), 'pipe::relu' ")
    assert "'pipe::transpose' (node 'transpose') are not defined in the dispatcher." in message


def _two_input_graph(pipe: Ops) -> Graph:
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((Sym("s0"), 3), "float32"))
    y = graph.placeholder("y", TensorMeta(("s0", 3), np.float32))
    graph.output(graph.call(pipe.pipe.add.default, (x, y), meta=x.meta))
    return graph


def test_symbolic_sizes_accept_any_size(pipe: Ops) -> None:
    graph = _two_input_graph(pipe)
    for rows in (1, 5):
        a = np.ones((rows, 3), np.float32)
        np.testing.assert_array_equal(graph(a, a), 2 * a)


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        pytest.param(
            np.ones((2, 3), np.float64),
            np.ones((2, 3), np.float32),
            "Graph.run: input 'x' has dtype float64, but the graph was traced with float32 "
            "(f32[s0, 3]). The recorded ops were chosen and checked for that dtype. Convert "
            "the input (e.g. x.astype('float32')), or trace again with float64 inputs.",
            id="dtype",
        ),
        pytest.param(
            np.ones((2, 3), np.float32),
            np.ones(3, np.float32),
            "Graph.run: input 'y' has rank 1 (shape (3,)), but the graph expects rank 2 "
            "(f32[s0, 3]). Every recorded op was traced for that many dimensions. Pass a "
            "2-d input, or trace again with this rank.",
            id="rank",
        ),
        pytest.param(
            np.ones((2, 4), np.float32),
            np.ones((2, 3), np.float32),
            "Graph.run: input 'x' has size 4 in dimension 1, but the graph was traced with "
            "size 3 there (f32[s0, 3]). Only symbolic sizes (like s0) may change between "
            "runs. Pass an input of shape [s0, 3], or trace with a dynamic size for that "
            "dimension.",
            id="size",
        ),
        pytest.param(
            np.ones((2, 3), np.float32),
            np.ones((5, 3), np.float32),
            "Graph.run: input 'y' has size 5 in dimension 0 (f32[s0, 3]), but s0 is 2 from "
            "input 'x' dimension 0. The graph was traced with these sizes equal, and its ops "
            "may rely on it. Pass inputs whose sizes spelled s0 agree.",
            id="symbol",
        ),
        pytest.param(
            3,
            np.ones((5, 3), np.float32),
            "Graph.run: input 'x' must be a tensor f32[s0, 3], got int 3. The graph was traced "
            "with a tensor there. Pass an array of that dtype and rank.",
            id="not-a-tensor",
        ),
    ],
)
def test_inputs_that_do_not_fit_are_refused(pipe: Ops, x: Any, y: Any, message: str) -> None:
    with pytest.raises(GraphError) as excinfo:
        _two_input_graph(pipe)(x, y)
    assert str(excinfo.value) == message


def test_wrong_number_of_inputs(pipe: Ops) -> None:
    with pytest.raises(GraphError) as excinfo:
        _two_input_graph(pipe)(np.ones((2, 3), np.float32))
    assert str(excinfo.value) == (
        "Graph.run: expected 2 inputs (x, y), got 1. A graph takes one value per "
        "placeholder, in order. Pass exactly those inputs."
    )


def test_a_graph_without_output_does_not_run() -> None:
    graph = Graph()
    graph.placeholder("x")
    with pytest.raises(GraphError, match=r"^Graph.run: the graph has no output\. "):
        graph(1)


def test_symbolic_arguments_are_computed_from_the_input_sizes(pipe: Ops) -> None:
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((Sym("s0"), 3), "float32"))
    shape = [Constant.sym(Sym("3*s0")), 1]
    flat = graph.call(pipe.pipe.reshape.default, (x, shape), meta=TensorMeta(("3*s0", 1), "f32"))
    graph.output(flat)
    assert graph(np.ones((4, 3), np.float32)).shape == (12, 1)
    assert "ops.pipe.reshape.default(x, [3*s0, 1])" in str(graph)


def test_a_data_dependent_symbol_cannot_be_recomputed(pipe: Ops) -> None:
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((4, 3), "float32"))
    graph.output(graph.call(pipe.pipe.reshape.default, (x, [Constant.sym("u0")])))
    with pytest.raises(GraphError) as excinfo:
        graph(np.ones((4, 3), np.float32))
    assert str(excinfo.value) == (
        "Graph.run: cannot compute the symbolic size 'u0': symbol 'u0' is not a size of any "
        "input (symbols bound by the inputs: none); data-dependent sizes cannot be "
        "recomputed. A symbolic argument is recomputed from the input sizes on every run. "
        "Trace again with static sizes, or pass that value as a graph input."
    )


def test_dtype_and_device_constants_reach_the_kernel(pipe: Ops) -> None:
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2,), "float32"))
    graph.output(graph.call(pipe.pipe.cast.default, (x, Constant.dtype("int64"))))
    loaded = Graph.from_json(graph.to_json(), dispatcher=pipe.pipe.cast.default.dispatcher)
    assert loaded(np.array([1.5, 2.5], np.float32)).dtype == np.int64


def test_a_failing_kernel_names_the_node(pipe: Ops) -> None:
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2, 3), "float32"))
    w = graph.placeholder("w", TensorMeta((2, 3), "float32"))
    graph.output(graph.call(pipe.pipe.matmul.default, (x, w)))
    with pytest.raises(ValueError, match="matmul") as excinfo:
        graph(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))
    assert excinfo.value.__notes__ == [
        "(while running node 'matmul': matmul = ops.pipe.matmul.default(x, w))"
    ]


def test_a_redefined_op_is_looked_up_again(dispatcher: Dispatcher) -> None:
    lib = Library("mylib", "DEF", dispatcher=dispatcher)
    lib.define("neg(Tensor x) -> Tensor")
    lib.impl("neg", lambda x: -x, "CPU")
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2,), "float32"))
    graph.output(graph.call(dispatcher.find_schema_or_throw("mylib::neg"), (x,)))
    one = np.ones(2, np.float32)
    np.testing.assert_array_equal(graph(one), -one)
    lib.close()
    with pytest.raises(UnknownOperatorError, match=r"^Graph.run: operator 'mylib::neg'"):
        graph(one)
    with Library("mylib", "DEF", dispatcher=dispatcher) as again:
        again.define("neg(Tensor x) -> Tensor")
        again.impl("neg", lambda x: x - 10, "CPU")
        np.testing.assert_array_equal(graph(one), one - 10)

"""The builder: names, references, users and inputs, misuse errors, lint."""

from __future__ import annotations

import numpy as np
import pytest

from customop.dispatch import Dispatcher
from customop.library import Ops, custom_op
from customop.trace import Constant, ConstantKind, Graph, GraphError, NodeKind, NodeRef, TensorMeta

F32 = TensorMeta((2,), "float32")


def test_names_are_unique_deterministic_identifiers(pipe: Ops) -> None:
    graph = Graph()
    x = graph.placeholder("x", F32)
    odd = graph.placeholder("my input", F32)
    taken = graph.placeholder("relu_1", F32)
    keyword = graph.placeholder("lambda", F32)
    reserved = graph.placeholder("ops", F32)
    relus = [graph.call(pipe.pipe.relu.default, (x,), meta=F32) for _ in range(3)]
    out = graph.output(relus[-1])
    assert [odd.name, taken.name, keyword.name, reserved.name] == [
        "my_input",
        "relu_1",
        "lambda_",
        "ops_1",
    ]
    assert [r.name for r in relus] == ["relu", "relu_2", "relu_3"]
    assert out.name == "output"


def test_nodes_users_and_inputs(pipe: Ops) -> None:
    graph = Graph()
    x = graph.placeholder("x", F32)
    both = graph.call(pipe.pipe.add.default, (x, x), meta=F32)
    top = graph.call(pipe.pipe.topk.default, (both, 1), meta=(F32, TensorMeta((2,), "int64")))
    out = graph.output((top[0], [top[1], both], {"x": x}))
    assert graph.nodes == (x, both, top, out)
    assert graph.placeholders == (x,)
    assert graph.output_node is out
    assert x.users == (both, out)
    assert both.inputs == (x,)
    assert both.args == (x.ref, x.ref)
    assert out.inputs == (top, both, x)
    assert top.users == (out,)
    assert out.args == ((NodeRef(top, 0), [NodeRef(top, 1), both.ref], {"x": x.ref}),)
    assert [n.kind for n in graph.nodes] == [
        NodeKind.PLACEHOLDER,
        NodeKind.CALL,
        NodeKind.CALL,
        NodeKind.OUTPUT,
    ]
    assert top.target == "pipe::topk"
    assert graph.node("topk") is top
    graph.lint()


def test_multi_output_nodes_unpack(pipe: Ops) -> None:
    graph = Graph()
    x = graph.placeholder("x", F32)
    top = graph.call(pipe.pipe.topk.default, (x, 1), meta=[F32, None])
    values, indices = top
    assert (values.item, indices.item) == (0, 1)
    assert values.meta == F32 and indices.meta is None
    assert top.meta == (F32, None)
    with pytest.raises(GraphError) as excinfo:
        top[2]
    assert str(excinfo.value) == (
        "Node.__getitem__: node 'topk' has 2 outputs, so it has no output 2. Only nodes "
        "whose metadata is a tuple (ops returning several values) can be indexed. Use the "
        "node itself, or an index below the count."
    )
    with pytest.raises(GraphError, match=r"^Node.__iter__: node 'x' has one output"):
        tuple(x)


def test_ops_may_be_handles_overloads_or_custom_ops(dispatcher: Dispatcher) -> None:
    @custom_op("mylib::twice", mutates_args=(), dispatcher=dispatcher)
    def twice(x: np.ndarray) -> np.ndarray:
        return 2 * x

    graph = Graph()
    x = graph.placeholder("x", F32)
    a = graph.call(twice, (x,), meta=F32)
    b = graph.call(twice.op, (a,), meta=F32)
    c = graph.call(dispatcher.find_schema_or_throw("mylib::twice"), (b,), meta=F32)
    graph.output(c)
    assert {a.target, b.target, c.target} == {"mylib::twice"}
    np.testing.assert_array_equal(graph(np.ones(2, np.float32)), [8.0, 8.0])


def test_other_values_become_tagged_constants(pipe: Ops) -> None:
    graph = Graph()
    x = graph.placeholder("x", F32)

    class Device:
        type = "cuda"

        def __str__(self) -> str:
            return "cuda:1"

    node = graph.call(
        pipe.pipe.cast.default, (x, np.float32, np.dtype("int8"), Device(), np.arange(2))
    )
    kinds = [(c.kind, c.text) for c in node.args[1:]]
    assert kinds == [
        (ConstantKind.DTYPE, "float32"),
        (ConstantKind.DTYPE, "int8"),
        (ConstantKind.DEVICE, "cuda:1"),
        (ConstantKind.OPAQUE, "<ndarray i64[2]>"),
    ]
    assert node.args[1] == Constant.dtype("float32")
    assert node.args[1].live() is np.float32


def test_builder_misuse_is_refused(pipe: Ops) -> None:
    graph = Graph()
    x = graph.placeholder("x", F32)
    other = Graph().placeholder("y", F32)
    with pytest.raises(GraphError) as excinfo:
        graph.call(pipe.pipe.relu.default, (other,))
    assert str(excinfo.value) == (
        "Graph: node 'y' belongs to another graph. A graph refers only to its own earlier "
        "nodes. Record the value in this graph (graph.placeholder or graph.call)."
    )
    with pytest.raises(GraphError, match=r"^Graph: dict key \(1, 2\) \(tuple\) is not a constant"):
        graph.call(pipe.pipe.relu.default, ({(1, 2): x},))
    with pytest.raises(TypeError, match=r"^Graph: metadata must be a TensorMeta"):
        graph.call(pipe.pipe.relu.default, (x,), meta=(2,))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^Graph.call: expected an operator, got str"):
        graph.call("pipe::relu", (x,))  # type: ignore[arg-type]
    graph.output(x)
    with pytest.raises(GraphError) as excinfo:
        graph.call(pipe.pipe.relu.default, (x,))
    assert str(excinfo.value) == (
        "Graph.call: the graph already has its output (node 'output'). The output is the "
        "last node, so nothing can follow it. Build every node before calling "
        "graph.output(...)."
    )
    # A refused call leaves no trace: no node, no name taken, no user added.
    assert [n.name for n in graph.nodes] == ["x", "output"]
    assert x.users == (graph.output_node,)
    with pytest.raises(KeyError, match="Names in this graph: x, output"):
        graph.node("relu")


def test_lint_reports_every_broken_invariant(pipe: Ops) -> None:
    graph = Graph()
    x = graph.placeholder("x", F32)
    relu = graph.call(pipe.pipe.relu.default, (x,), meta=F32)
    late = graph.call(pipe.pipe.relu.default, (relu,), meta=F32)
    relu.args = (late.ref,)  # a pass that breaks the order
    late.name = "x"
    with pytest.raises(GraphError) as excinfo:
        graph.lint()
    assert excinfo.value.problems == (
        "node 1 ('relu'): uses 'x', which is not an earlier node of this graph",
        "node 1 ('relu'): its inputs do not match the nodes its arguments use",
        "node 2 ('x'): its name is used by an earlier node",
        "the graph has no output (call graph.output(value) last)",
    )
    assert str(excinfo.value).startswith("Graph.lint: the graph breaks 4 invariant(s):\n  - ")
    assert repr(graph) == "<Graph: 1 inputs, 2 calls, no output yet>"

"""JSON: golden text, exact round trips (hypothesis), and the errors of loading."""

from __future__ import annotations

import json
import keyword
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from customop.dispatch import Dispatcher
from customop.exceptions import UnknownOperatorError
from customop.library import Library, Ops
from customop.trace import Constant, Graph, GraphError, GraphModel, Node, TensorMeta

SMALL = (
    '{"format":"customop.graph","version":1,'
    '"ops":{"pipe::relu":"pipe::relu(Tensor x) -> Tensor",'
    '"pipe::topk":"pipe::topk(Tensor x, int k) -> (Tensor values, Tensor indices)"},'
    '"nodes":['
    '{"kind":"placeholder","name":"x","meta":{"shape":["s0",3],"dtype":"float32","device":"cpu"}},'
    '{"kind":"call","name":"topk","target":"pipe::topk","args":[{"kind":"ref","node":0},1],'
    '"meta":[{"shape":["s0",1],"dtype":"float32","device":"cpu"},null]},'
    '{"kind":"call","name":"relu","target":"pipe::relu","args":[{"kind":"ref","node":1,"item":0}],'
    '"meta":{"shape":["s0",1],"dtype":"float32","device":"cpu"}},'
    '{"kind":"output","name":"output","args":[{"kind":"tuple","items":[{"kind":"ref","node":2}]}]}'
    "]}"
)


def _small(pipe: Ops) -> Graph:
    graph = Graph()
    x = graph.placeholder("x", TensorMeta(("s0", 3), "float32"))
    top = graph.call(pipe.pipe.topk.default, (x, 1), meta=(TensorMeta(("s0", 1), "f32"), None))
    graph.output((graph.call(pipe.pipe.relu.default, (top[0],), meta=top[0].meta),))
    return graph


def test_golden_json(pipe: Ops, dispatcher: Dispatcher) -> None:
    graph = _small(pipe)
    assert graph.to_json() == SMALL
    assert Graph.from_json(SMALL, dispatcher=dispatcher).to_json() == SMALL
    assert json.loads(graph.to_json(indent=2)) == json.loads(SMALL)


def test_round_trip_preserves_printing_and_pictures(
    showcase: Graph, dispatcher: Dispatcher
) -> None:
    text = showcase.to_json()
    loaded = Graph.from_json(text, dispatcher=dispatcher)
    assert str(loaded) == str(showcase)
    assert loaded.to_json() == text
    assert loaded.to_model() == showcase.to_model() == GraphModel.model_validate_json(text)
    loaded.lint()
    assert [n.op for n in loaded.nodes] == [n.op for n in showcase.nodes]


def test_from_model_and_the_default_dispatcher(showcase: Graph) -> None:
    # The "pipe" ops live in the fixture's dispatcher, not the global one.
    with pytest.raises(UnknownOperatorError) as excinfo:
        Graph.from_model(showcase.to_model())
    assert str(excinfo.value).startswith("Graph.from_model: operators 'pipe::matmul' (node ")


def test_missing_op_names_it_and_close_matches(pipe: Ops) -> None:
    text = _small(pipe).to_json()
    other = Dispatcher()
    with Library("pipe", "DEF", dispatcher=other) as lib:
        lib.define("topk(Tensor x, int k) -> (Tensor values, Tensor indices)")
        lib.define("relu6(Tensor x) -> Tensor")
        with pytest.raises(UnknownOperatorError) as excinfo:
            Graph.from_json(text, dispatcher=other)
    assert str(excinfo.value) == (
        "Graph.from_json: operator 'pipe::relu' (node 'relu') (did you mean 'pipe::relu6'?) "
        "is not defined in the dispatcher. A graph stores each op by its qualified name and "
        "looks it up again to run. Define the op first (import the module that registers "
        "it), or pass the dispatcher that has it as dispatcher=."
    )
    assert excinfo.value.op == "pipe::relu"


def test_a_redefined_op_is_refused(pipe: Ops) -> None:
    text = _small(pipe).to_json()
    other = Dispatcher()
    with Library("pipe", "DEF", dispatcher=other) as lib:
        lib.define("topk(Tensor x, int k, bool largest=True) -> (Tensor values, Tensor indices)")
        lib.define("relu(Tensor x) -> Tensor")
        with pytest.raises(GraphError) as excinfo:
            Graph.from_json(text, dispatcher=other)
    assert str(excinfo.value) == (
        "Graph.from_json: operator 'pipe::topk' is now defined as 'pipe::topk(Tensor x, int k, "
        "bool largest=True) -> (Tensor values, Tensor indices)', but the graph was saved with "
        "'pipe::topk(Tensor x, int k) -> (Tensor values, Tensor indices)'. The recorded "
        "arguments follow the saved schema and may not bind to the new one. Trace the "
        "function again, or load with a dispatcher that defines the saved schema."
    )


def _edit(text: str, path: list[Any], value: Any) -> str:
    data = json.loads(text)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(data)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        pytest.param(
            ["nodes", 1, "args", 0, "node"],
            2,
            "Graph.from_json: node 1 ('topk') refers to node 2, which does not come before "
            "it. A node may only use the values of earlier nodes. Fix the reference.",
            id="forward-reference",
        ),
        pytest.param(
            ["nodes", 2, "args", 0, "item"],
            1 << 3,
            "Graph.from_json: node 2 ('relu') uses output 8 of node 'topk', which has no such "
            "output. Only ops with several outputs (tuple metadata) can be indexed. Fix the "
            "item or the metadata.",
            id="bad-item",
        ),
        pytest.param(
            ["nodes", 2, "name"],
            "topk",
            "Graph.from_json: node 2 ('topk'): the name is used twice. Each node needs its "
            "own name. Rename one.",
            id="duplicate-name",
        ),
        pytest.param(
            ["nodes", 2, "name"],
            "class",
            "Graph.from_json: node 2 ('class'): its name is not a usable variable name. Node "
            "names are the variables of the printed code. Use an identifier that is not a "
            "keyword nor one of device, dtype, float, ops.",
            id="keyword-name",
        ),
        pytest.param(
            ["nodes", 1, "target"],
            "pipe::topk.default",
            "Graph.from_json: node 'topk' has target 'pipe::topk.default', which is not an "
            "operator name. Ops are saved by qualified name. Write 'namespace::name' or "
            "'namespace::name.overload' (the default overload has none).",
            id="bad-target",
        ),
        pytest.param(
            ["nodes", 3, "args"],
            [],
            "Graph.from_json: node 3 ('output'): an output has exactly one argument (the "
            "value) and is the last node. Only one output ends a graph. Fix the output node.",
            id="empty-output",
        ),
        pytest.param(
            ["version"],
            2,
            "Graph.from_json: the text is not a saved graph: at version: Input should be 1. "
            "Graph.to_json writes this format ('customop.graph', version 1). Load text that "
            "Graph.to_json wrote, or fix the field named.",
            id="version",
        ),
        pytest.param(
            ["nodes", 1, "args", 0],
            {"kind": "tensor"},
            "Graph.from_json: the text is not a saved graph: at node 1 ('topk'), field args.0: "
            "an argument is null, a boolean, a number, a string, or an object whose 'kind' is "
            "one of ref, list, tuple, dict, dtype, device, sym, float, complex. Graph.to_json "
            "writes this format ('customop.graph', version 1). Load text that Graph.to_json "
            "wrote, or fix the field named.",
            id="unknown-tag",
        ),
    ],
)
def test_invalid_text_is_refused(
    pipe: Ops, dispatcher: Dispatcher, path: list[Any], value: Any, message: str
) -> None:
    text = _edit(_small(pipe).to_json(), path, value)
    with pytest.raises(GraphError) as excinfo:
        Graph.from_json(text, dispatcher=dispatcher)
    assert str(excinfo.value) == message


def test_opaque_values_cannot_be_saved(pipe: Ops) -> None:
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2,), "float32"))
    graph.output(graph.call(pipe.pipe.add.default, (x, np.ones(2, np.float32))))
    with pytest.raises(GraphError) as excinfo:
        graph.to_json()
    assert str(excinfo.value) == (
        "Graph.to_json: node 'add' uses the value <ndarray f32[2]>, which JSON cannot hold. "
        "A saved graph keeps only None, bool, int, float, complex, str, dtypes, devices, "
        "symbolic sizes and node values. Make the value a graph input (graph.placeholder) or "
        "pass a plain constant instead."
    )


# -- random graphs --------------------------------------------------------------------

RANDOM_OPS = [
    "rnd::f(Any[] a) -> Tensor",
    "rnd::g.over(Any[] a) -> Tensor",
    "rnd::import(Any a) -> ()",
]
_random_dispatcher = Dispatcher()
for _schema in RANDOM_OPS:
    _random_dispatcher.register_def(_schema)
_HANDLES = [_random_dispatcher.find_schema_or_throw(s.partition("(")[0]) for s in RANDOM_OPS]

sizes = st.one_of(st.integers(0, 2**40), st.sampled_from(["s0", "s1", "2*s0 + 1", "u0"]))
metas = st.builds(
    TensorMeta,
    st.lists(sizes, max_size=3),
    st.sampled_from(["float32", "int64", "bool", "bfloat16", "complex64"]),
    st.sampled_from(["cpu", "cuda:1", "meta"]),
)
node_metas = st.one_of(st.none(), metas, st.lists(st.one_of(st.none(), metas), max_size=3))
text = st.text(st.characters(codec="utf-8"), max_size=8)  # JSON text has no lone surrogates
plain = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(allow_nan=True, allow_infinity=True),
    text,
    st.sampled_from(["float32", "int8"]).map(Constant.dtype),
    st.sampled_from(["cpu", "cuda:0"]).map(Constant.device),
    st.sampled_from(["s0", "s0*s1", "max(s0, 3)"]).map(Constant.sym),
)
keys = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(), text)


def _values(data: st.DataObject, nodes: list[Node]) -> Any:
    """A strategy for argument structures referring to ``nodes``."""
    refs: list[st.SearchStrategy[Any]] = [st.just(n) for n in nodes]
    refs += [st.just(n[i]) for n in nodes if isinstance(n.meta, tuple) for i in range(len(n.meta))]
    leaves = st.one_of(plain, *refs) if refs else plain
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.lists(inner, max_size=3).map(tuple),
            st.dictionaries(keys, inner, max_size=3),
        ),
        max_leaves=6,
    )


def _random_graph(data: st.DataObject) -> Graph:
    graph = Graph()
    names = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)
    for _ in range(data.draw(st.integers(0, 3))):
        graph.placeholder(data.draw(names), data.draw(st.one_of(st.none(), metas)))
    for _ in range(data.draw(st.integers(0, 6))):
        nodes = list(graph.nodes)
        args = data.draw(st.lists(_values(data, nodes), max_size=3))
        kwargs = data.draw(st.dictionaries(names, _values(data, nodes), max_size=2))
        graph.call(data.draw(st.sampled_from(_HANDLES)), args, kwargs, data.draw(node_metas))
    if data.draw(st.booleans()):
        graph.output(data.draw(_values(data, list(graph.nodes))))
    return graph


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_random_graphs_round_trip_exactly(data: st.DataObject) -> None:
    graph = _random_graph(data)
    if graph.output_node is not None:
        graph.lint()
    text = graph.to_json()
    loaded = Graph.from_json(text, dispatcher=_random_dispatcher)
    assert loaded.to_json() == text
    assert str(loaded) == str(graph)
    assert loaded.to_mermaid() == graph.to_mermaid()
    assert [n.name for n in loaded.nodes] == [n.name for n in graph.nodes]
    assert all(n.name.isidentifier() and not keyword.iskeyword(n.name) for n in graph.nodes)


def test_floats_and_ints_keep_their_types(dispatcher: Dispatcher) -> None:
    dispatcher.register_def("rnd::f(Any[] a) -> Tensor")
    graph = Graph()
    values = [1, 1.0, True, -0.0, float("nan"), 10**30, 1e-300, 2j]
    graph.output(graph.call(dispatcher.find_schema_or_throw("rnd::f"), (values,)))
    loaded = Graph.from_json(graph.to_json(), dispatcher=dispatcher)
    (got,) = loaded.node("f").args
    assert [type(v) for v in got] == [type(v) for v in values]
    assert math.isnan(got[4]) and math.copysign(1.0, got[3]) == -1.0
    assert got[5] == 10**30 and got[6] == 1e-300 and got[7] == 2j

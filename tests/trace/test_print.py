"""``print(graph)``: golden text, and the rules for names, constants and comments."""

from __future__ import annotations

import numpy as np

from customop.dispatch import Dispatcher
from customop.library import Library, Ops
from customop.trace import Constant, Graph, TensorMeta
from tests.trace.conftest import Sym

SHOWCASE = """\
def forward(x: f32[s0, 3], w: f32[3, 4]):
    matmul = ops.pipe.matmul.default(x, w)                   # f32[s0, 4]
    relu = ops.pipe.relu.default(matmul)                     # f32[s0, 4]
    scale = ops.pipe.scale.default(relu, factor=0.5)         # f32[s0, 4]
    relu_1 = ops.pipe.relu.default(scale)                    # f32[s0, 4]
    topk = ops.pipe.topk.default(relu_1, 2)                  # (f32[s0, 2], i64[s0, 2])
    cast = ops.pipe.cast.default(topk[0], dtype('float64'))  # f64[s0, 2]
    concat = ops.pipe.concat.default([cast, cast], 1)        # f64[s0, 4]
    return {'values': concat, 'indices': topk[1], 'hidden': relu_1}"""


def test_showcase_prints_as_golden_code(showcase: Graph) -> None:
    assert str(showcase) == SHOWCASE
    assert showcase.code() == SHOWCASE


def test_node_lines(showcase: Graph) -> None:
    assert showcase.node("x").code() == "x: f32[s0, 3]"
    assert showcase.node("topk").code() == "topk = ops.pipe.topk.default(relu_1, 2)"
    assert showcase.node("topk").meta_text == "(f32[s0, 2], i64[s0, 2])"
    assert repr(showcase.node("topk")) == "<Node 6 topk: call pipe::topk>"
    assert repr(showcase.node("x")) == "<Node 0 x: placeholder f32[s0, 3]>"


def test_empty_and_partial_graphs_print() -> None:
    graph = Graph()
    assert str(graph) == "def forward():\n    pass"
    graph.placeholder("n")
    graph.output((1, None))
    assert str(graph) == "def forward(n):\n    return (1, None)"


def test_constants_print_as_python(pipe: Ops) -> None:
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2,), "bool", "cuda:0"))
    args = (
        x,
        float("inf"),
        float("-inf"),
        float("nan"),
        -0.0,
        1 + 2j,
        "it's",
        (x,),
        (),
        {1: None, "k": [True]},
        Constant.device("cuda:1"),
        Constant.sym(Sym("2*s0 + 1")),
    )
    graph.output(graph.call(pipe.pipe.relu.default, args, meta=x.meta))
    assert str(graph) == (
        "def forward(x: b8[2]@cuda:0):\n"
        "    relu = ops.pipe.relu.default(x, float('inf'), float('-inf'), float('nan'), -0.0, "
        "(1+2j), \"it's\", (x,), (), {1: None, 'k': [True]}, device('cuda:1'), 2*s0 + 1)"
        "  # b8[2]@cuda:0\n"
        "    return relu"
    )


def test_long_statements_do_not_push_the_comments(pipe: Ops) -> None:
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((2,), "float32"))
    many = [x] * 12
    graph.call(pipe.pipe.concat.default, (many,), meta=TensorMeta((24,), "float32"))
    graph.output(graph.call(pipe.pipe.relu.default, (x,), meta=x.meta))
    lines = str(graph).splitlines()
    assert lines[1].endswith("x, x])  # f32[24]")
    assert lines[2] == "    relu = ops.pipe.relu.default(x)  # f32[2]"


def test_keyword_named_ops_print_like_the_ops_namespace(dispatcher: Dispatcher) -> None:
    with Library("lib", "DEF", dispatcher=dispatcher) as lib:
        lib.define("import(Tensor x) -> Tensor")
        lib.define("add.in(Tensor x) -> Tensor")
        graph = Graph()
        x = graph.placeholder("x")
        a = graph.call(dispatcher.find_schema_or_throw("lib::import"), (x,))
        b = graph.call(dispatcher.find_schema_or_throw("lib::add.in"), (a,))
        graph.output(b)
        assert str(graph) == (
            "def forward(x):\n"
            "    import_ = ops.lib.import_.default(x)\n"
            "    add = ops.lib.add.in_(import_)\n"
            "    return add"
        )
        ops = Ops(dispatcher)
        assert ops.lib.import_.default.handle is a.op
        assert ops.lib.add.in_.handle is b.op


def test_unknown_dtypes_print_by_name() -> None:
    graph = Graph()
    graph.placeholder("q", TensorMeta((2,), "float8_e4m3fn"))
    graph.placeholder("r", TensorMeta((), np.int16))
    assert str(graph) == "def forward(q: float8_e4m3fn[2], r: i16[]):\n    pass"

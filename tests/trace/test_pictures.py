"""Mermaid and DOT pictures: golden text."""

from __future__ import annotations

from customop.library import Ops
from customop.trace import Graph, TensorMeta

MERMAID = """\
flowchart TD
    n0(["x<br/>f32[s0, 3]"])
    n1(["w<br/>f32[3, 4]"])
    n2["pipe::matmul<br/>f32[s0, 4]"]
    n3["pipe::relu<br/>f32[s0, 4]"]
    n4["pipe::scale<br/>f32[s0, 4]"]
    n5["pipe::relu<br/>f32[s0, 4]"]
    n6["pipe::topk<br/>(f32[s0, 2], i64[s0, 2])"]
    n7["pipe::cast<br/>f64[s0, 2]"]
    n8["pipe::concat<br/>f64[s0, 4]"]
    n9[/"output"\\]
    n0 --> n2
    n1 --> n2
    n2 --> n3
    n3 --> n4
    n4 --> n5
    n5 --> n6
    n6 -->|0| n7
    n7 --> n8
    n8 --> n9
    n6 -->|1| n9
    n5 --> n9"""

DOT = """\
digraph forward {
    node [fontname="monospace"];
    n0 [label="x\\nf32[s0, 3]", shape=oval];
    n1 [label="w\\nf32[3, 4]", shape=oval];
    n2 [label="pipe::matmul\\nf32[s0, 4]", shape=box];
    n3 [label="pipe::relu\\nf32[s0, 4]", shape=box];
    n4 [label="pipe::scale\\nf32[s0, 4]", shape=box];
    n5 [label="pipe::relu\\nf32[s0, 4]", shape=box];
    n6 [label="pipe::topk\\n(f32[s0, 2], i64[s0, 2])", shape=box];
    n7 [label="pipe::cast\\nf64[s0, 2]", shape=box];
    n8 [label="pipe::concat\\nf64[s0, 4]", shape=box];
    n9 [label="output", shape=trapezium];
    n0 -> n2;
    n1 -> n2;
    n2 -> n3;
    n3 -> n4;
    n4 -> n5;
    n5 -> n6;
    n6 -> n7 [label="0"];
    n7 -> n8;
    n8 -> n9;
    n6 -> n9 [label="1"];
    n5 -> n9;
}"""


def test_mermaid_golden(showcase: Graph) -> None:
    assert showcase.to_mermaid() == MERMAID


def test_dot_golden(showcase: Graph) -> None:
    assert showcase.to_dot() == DOT


def test_pictures_survive_json(showcase: Graph, pipe: Ops) -> None:
    loaded = Graph.from_json(showcase.to_json(), dispatcher=pipe.pipe.relu.default.dispatcher)
    assert loaded.to_mermaid() == MERMAID
    assert loaded.to_dot() == DOT


def test_labels_are_escaped() -> None:
    graph = Graph()
    graph.placeholder("x", TensorMeta((2,), 'weird"dtype\\'))
    assert graph.to_mermaid().splitlines()[1] == r'    n0(["x<br/>weird#quot;dtype\[2]"])'
    assert graph.to_dot().splitlines()[2] == r'    n0 [label="x\nweird\"dtype\\[2]", shape=oval];'

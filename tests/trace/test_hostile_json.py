"""Crafted graph JSON (issue #11 §1): every field is checked like a name, or escaped.

A text field of a saved graph reaches ``str(graph)``, Mermaid and DOT text
and error messages; each bad one is a `GraphError` naming the node and the
field, of bounded length, and no label can carry a newline or raw HTML.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from customop.dispatch import Dispatcher
from customop.library import Ops
from customop.trace import Graph, GraphError, TensorMeta
from customop.trace._pictures import _dot_text, _mermaid_text


def _small_text(pipe: Ops) -> str:
    graph = Graph()
    x = graph.placeholder("x", TensorMeta(("s0", 3), "float32"))
    graph.output(graph.call(pipe.pipe.relu.default, (x,), meta=TensorMeta(("s0", 3), "f32")))
    return graph.to_json()


def _edit(text: str, path: list[Any], value: Any) -> str:
    data = json.loads(text)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(data)


INJECTED = "float32\n    import os  # injected"
HUGE = "x" * 1_000_000


@pytest.mark.parametrize(
    ("path", "value", "where"),
    [
        (["nodes", 0, "meta", "dtype"], INJECTED, "node 0 ('x'), field meta.dtype"),
        (["nodes", 0, "meta", "device"], "cpu\nEVIL", "node 0 ('x'), field meta.device"),
        (["nodes", 0, "meta", "dtype"], "<img src=x onerror=alert(1)>", "field meta.dtype"),
        (["nodes", 0, "meta", "dtype"], "(", "node 0 ('x'), field meta.dtype"),
        (["nodes", 0, "meta", "shape"], ["9" * 5000, 3], "node 0 ('x'), field meta.shape.0"),
        (["nodes", 0, "meta", "shape"], ["(" * 500 + "s0" + ")" * 500], "field meta.shape.0"),
        (["nodes", 0, "meta", "shape"], [2**64], "node 0 ('x'), field meta.shape.0"),
        (["nodes", 0, "meta", "shape"], ["s0\nEVIL"], "node 0 ('x'), field meta.shape.0"),
        (["nodes", 0, "name"], HUGE, "node 0 ('xxxxx"),
        (["nodes", 1, "target"], "pipe::relu\nEVIL", "node 1 ('relu'), field target"),
        (["nodes", 1, "kwargs"], {"a=1)\nEVIL(": 1}, "node 1 ('relu'), field kwargs."),
        (["nodes", 1, "args", 0], {"kind": "dtype", "name": "f\nX"}, "field args.0.dtype.name"),
        (["nodes", 1, "args", 0], {"kind": "device", "name": "<b>"}, "field args.0.device.name"),
        (["nodes", 1, "args", 0], {"kind": "sym", "expr": "s0" * 200}, "field args.0.sym.expr"),
        (["nodes", 1, "args", 0], {"kind": "complex", "value": HUGE}, "args.0.complex.value"),
    ],
    ids=[
        "dtype-newline",
        "device-newline",
        "dtype-html",
        "dtype-numpy-syntax",
        "size-5000-digits-text",
        "size-deep-parens",
        "size-beyond-64-bits",
        "size-newline",
        "name-huge",
        "target-newline",
        "kwarg-name",
        "dtype-arg",
        "device-arg",
        "sym-arg-long",
        "complex-huge",
    ],
)
def test_crafted_fields_are_graph_errors_naming_node_and_field(
    pipe: Ops, dispatcher: Dispatcher, path: list[Any], value: Any, where: str
) -> None:
    text = _edit(_small_text(pipe), path, value)
    with pytest.raises(GraphError) as caught:
        Graph.from_json(text, dispatcher=dispatcher)
    message = str(caught.value)
    assert where in message
    assert "\n" not in message
    assert len(message) < 800


@pytest.mark.parametrize("depth", [300, 20_000], ids=["300", "20000"])
def test_deep_nesting_is_a_graph_error(pipe: Ops, dispatcher: Dispatcher, depth: int) -> None:
    nested = '{"kind":"list","items":[' * depth + "1" + "]}" * depth
    text = _small_text(pipe).replace('"args":[{"kind":"ref","node":0}]', f'"args":[{nested}]')
    with pytest.raises(GraphError):
        Graph.from_json(text, dispatcher=dispatcher)


def test_a_changed_schema_quotes_the_saved_one_clipped(pipe: Ops, dispatcher: Dispatcher) -> None:
    text = _edit(_small_text(pipe), ["ops", "pipe::relu"], HUGE)
    with pytest.raises(GraphError) as caught:
        Graph.from_json(text, dispatcher=dispatcher)
    assert len(str(caught.value)) < 1000


@pytest.mark.parametrize(
    ("text", "mermaid", "dot"),
    [
        ('a"b', "a#quot;b", 'a\\"b'),
        ("<img src=x>", "#lt;img src=x#gt;", "&lt;img src=x&gt;"),
        ("a&b#c", "a#amp;b#35;c", "a&amp;b#c"),
        ("a\nb\\c", "a b\\c", "a\\nb\\\\c"),
    ],
    ids=["quote", "html", "entities", "newline"],
)
def test_labels_are_escaped(text: str, mermaid: str, dot: str) -> None:
    assert _mermaid_text(text) == mermaid
    assert _dot_text(text) == dot


def test_pictures_of_an_in_process_graph_escape_its_metadata(pipe: Ops) -> None:
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((3,), "<b>\nEVIL"))
    graph.output(graph.call(pipe.pipe.relu.default, (x,), meta=TensorMeta((3,), "f32")))
    for picture in (graph.to_mermaid(), graph.to_dot()):
        assert "<b>" not in picture
        assert not any(line.startswith("EVIL") for line in picture.splitlines())

"""Pictures of a graph: Mermaid ``flowchart`` and Graphviz DOT text.

Both draw one box per node (inputs rounded, calls as rectangles, the output
as a trapezoid), labelled with the input's name or the call's op, and the
value's metadata; one edge per value a node uses, labelled with the output
index when it is one output of several. A call that writes an input gets a
dashed *ordering* edge, labelled ``writes x``, to every later node that reads
``x``: that node reads the written value (see `ordering_edges`). Ids are
``n<index>``, so the text depends only on the graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from customop.trace._lint import refs
from customop.trace._mutation import ordering_edges
from customop.trace._node import Node, NodeKind
from customop.trace._printer import FUNCTION_NAME

if TYPE_CHECKING:
    from customop.trace._graph import Graph

__all__ = ["dot", "mermaid"]


def _lines(node: Node) -> list[str]:
    if node.kind is NodeKind.OUTPUT:
        return ["output"]
    head = (node.target or "") if node.kind is NodeKind.CALL else node.name
    meta = node.meta_text
    return [head, meta] if meta else [head]


def _edges(node: Node) -> list[tuple[int, int | None]]:
    """(source index, output item) per distinct value the node uses, in order of use."""
    found = {(ref.index, ref.item): None for ref in refs([node.args, node.kwargs])}
    return list(found)


# Mermaid renders labels as HTML and reads "#name;" as an entity: '#' goes first, so
# the entities written for the others stay entities. Newlines would end the statement.
_MERMAID_ESCAPES = (
    ("#", "#35;"), ('"', "#quot;"), ("&", "#amp;"), ("<", "#lt;"), (">", "#gt;"),
    ("\n", " "), ("\r", " "),
)  # fmt: skip


def _mermaid_text(text: str) -> str:
    """``text`` as literal characters in a Mermaid label: no HTML, no new statement."""
    for char, entity in _MERMAID_ESCAPES:
        text = text.replace(char, entity)
    return text


def mermaid(graph: Graph) -> str:
    lines = ["flowchart TD"]
    for node in graph._nodes:
        label = "<br/>".join(_mermaid_text(line) for line in _lines(node))
        if node.kind is NodeKind.PLACEHOLDER:
            lines.append(f'    n{node.index}(["{label}"])')
        elif node.kind is NodeKind.OUTPUT:
            lines.append(f'    n{node.index}[/"{label}"\\]')
        else:
            lines.append(f'    n{node.index}["{label}"]')
    for node in graph._nodes:
        for source, item in _edges(node):
            arrow = "-->" if item is None else f"-->|{item}|"
            lines.append(f"    n{source} {arrow} n{node.index}")
    for edge in ordering_edges(graph):
        label = _mermaid_text(f"writes {edge.value}")
        lines.append(f'    n{edge.writer} -.->|"{label}"| n{edge.reader}')
    return "\n".join(lines)


_DOT_SHAPES = {NodeKind.PLACEHOLDER: "oval", NodeKind.CALL: "box", NodeKind.OUTPUT: "trapezium"}


# Graphviz reads escapes in quoted labels and HTML entities in them ("&lt;"): keep
# both literal; a newline in the text is shown as one, never ends the statement.
_DOT_ESCAPES = (
    ("\\", "\\\\"), ('"', '\\"'), ("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"),
    ("\n", "\\n"), ("\r", "\\r"),
)  # fmt: skip


def _dot_text(text: str) -> str:
    for char, escaped in _DOT_ESCAPES:
        text = text.replace(char, escaped)
    return text


def dot(graph: Graph) -> str:
    lines = [f"digraph {FUNCTION_NAME} {{", '    node [fontname="monospace"];']
    for node in graph._nodes:
        label = "\\n".join(_dot_text(line) for line in _lines(node))
        shape = _DOT_SHAPES[node.kind]
        lines.append(f'    n{node.index} [label="{label}", shape={shape}];')
    for node in graph._nodes:
        for source, item in _edges(node):
            attrs = "" if item is None else f' [label="{item}"]'
            lines.append(f"    n{source} -> n{node.index}{attrs};")
    for edge in ordering_edges(graph):
        label = _dot_text(f"writes {edge.value}")
        lines.append(f'    n{edge.writer} -> n{edge.reader} [style=dashed, label="{label}"];')
    lines.append("}")
    return "\n".join(lines)

"""``print(graph)``: the graph as Python-like code.

::

    def forward(x: f32[s0, 3], w: f32[3, 4]):
        matmul = ops.mylib.matmul.default(x, w)  # f32[s0, 4]
        relu = ops.mylib.relu.default(matmul)    # f32[s0, 4]
        return (relu,)

One line per call node, named after its op (``relu``, ``relu_1``, ``fill_``,
...), with the result's metadata as a comment, and for a call that writes
an input, what it writes (``# writes x``: later readers read the written
value). Comments line up two spaces after the
longest statement that has one, but a statement longer than `ALIGN_LIMIT`
characters neither counts nor is padded: its comment just follows it, so one
long call does not push every comment far to the right.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from customop.trace._mutation import written
from customop.trace._node import Node, NodeKind

if TYPE_CHECKING:
    from customop.trace._graph import Graph

__all__ = ["ALIGN_LIMIT", "FUNCTION_NAME", "graph_code"]

FUNCTION_NAME: Final = "forward"
ALIGN_LIMIT: Final = 60
_INDENT: Final = "    "


def graph_code(graph: Graph) -> str:
    signature = [n.code() for n in graph._nodes if n.kind is NodeKind.PLACEHOLDER]
    body = [(n.code(), _comment(n)) for n in graph._nodes if n.kind is not NodeKind.PLACEHOLDER]
    lines = [f"def {FUNCTION_NAME}({', '.join(signature)}):"]
    lines += [f"{_INDENT}# assumes {condition}" for condition in graph._assumptions]
    width = max(
        (len(code) for code, comment in body if comment and len(code) <= ALIGN_LIMIT), default=0
    )
    for code, comment in body:
        line = f"{code:<{width}}  # {comment}" if comment else code
        lines.append(_INDENT + line)
    if not body:
        lines.append(_INDENT + "pass")
    return "\n".join(lines)


def _comment(node: Node) -> str:
    writes = ", ".join(ref.code for ref in written(node))
    if not writes:
        return node.meta_text
    return f"{node.meta_text}; writes {writes}" if node.meta_text else f"writes {writes}"

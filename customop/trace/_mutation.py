"""What a graph's mutating calls write, for its printed code and its pictures.

A call of an op whose schema marks an argument written (``Tensor(a!) x``)
changes that value in place: a later node that reads it reads the written
value, although no edge of the data flow says so (the call may return
nothing). The printer comments such a call (``# writes x``), and the pictures
draw an *ordering* edge from the writer to every later reader of the value,
so no picture suggests that they read the original.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from customop.trace._lint import refs
from customop.trace._node import Node, NodeKind, NodeRef

if TYPE_CHECKING:
    from customop.trace._graph import Graph

__all__ = ["OrderingEdge", "ordering_edges", "written"]


class OrderingEdge(NamedTuple):
    """A later reader of a value that a call wrote: drawn ``writer -> reader``."""

    writer: int
    reader: int
    value: str


def written(node: Node) -> list[NodeRef]:
    """The values a call node writes, in schema order (none for other nodes)."""
    if node.kind is not NodeKind.CALL or node.op is None:
        return []
    found: dict[NodeRef, None] = {}
    args, kwargs = node.args, node.kwargs
    for position, argument in enumerate(node.op.schema.arguments):
        if argument.is_write:
            value = args[position] if position < len(args) else kwargs.get(argument.name)
            found.update(dict.fromkeys(refs(value)))
    return list(found)


def ordering_edges(graph: Graph) -> list[OrderingEdge]:
    """Writer -> reader for each node that reads a value after a call wrote it."""
    edges: list[OrderingEdge] = []
    writers: dict[NodeRef, Node] = {}  # the latest writer of each value so far
    for node in graph._nodes:
        read = dict.fromkeys(refs([node.args, node.kwargs]))
        for ref in read:
            writer = writers.get(ref)
            if writer is not None and writer is not node:
                edges.append(OrderingEdge(writer.index, node.index, ref.code))
        for ref in written(node):
            writers[ref] = node
    return edges

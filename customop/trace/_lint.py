"""`Graph.lint`: the invariants the builder keeps, checked on a finished graph.

The builder cannot break them, but nodes are plain objects a tracer or pass
could edit; lint is the check to run after such edits, and in tests.
"""

from __future__ import annotations

import keyword
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from customop.trace._errors import GraphError
from customop.trace._node import RESERVED_NAMES, Node, NodeKind, NodeRef

if TYPE_CHECKING:
    from customop.trace._graph import Graph

__all__ = ["lint", "refs"]


def refs(value: Any) -> Iterator[NodeRef]:
    """Every `NodeRef` inside an argument structure, in order."""
    if isinstance(value, NodeRef):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from refs(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from refs(item)


def lint(graph: Graph) -> None:
    problems: list[str] = []
    names: set[str] = set()
    for position, node in enumerate(graph._nodes):
        where = f"node {position} ({node.name!r})"
        problems += [f"{where}: {p}" for p in _node_problems(graph, node, position, names)]
    if graph._output is None:
        problems.append("the graph has no output (call graph.output(value) last)")
    if problems:
        listing = "".join(f"\n  - {p}" for p in problems)
        raise GraphError(
            f"Graph.lint: the graph breaks {len(problems)} invariant(s):{listing}\n"
            "Printing, running and saving rely on them. Build graphs through placeholder, "
            "call and output only, and do not edit nodes in place.",
            problems=tuple(problems),
        )


def _node_problems(graph: Graph, node: Node, position: int, names: set[str]) -> list[str]:
    problems = []
    if node.index != position or node.graph is not graph:
        problems.append(f"its index is {node.index} or it belongs to another graph")
    name = node.name
    if not name.isidentifier() or keyword.iskeyword(name) or name in RESERVED_NAMES:
        problems.append("its name is not a usable variable name")
    if name in names:
        problems.append("its name is used by an earlier node")
    names.add(name)
    if node.kind is NodeKind.CALL and (node.target is None or node.op is None):
        problems.append("a call without a target op")
    if node.kind is NodeKind.OUTPUT and (
        graph._output is not node or position != len(graph._nodes) - 1
    ):
        problems.append("an output that is not the graph's last node")
    problems += _ref_problems(graph, node)
    problems += [
        f"lists {user.name!r} as a user, but that node does not use it"
        for user in node._users
        if node not in user._inputs
    ]
    return problems


def _ref_problems(graph: Graph, node: Node) -> list[str]:
    problems = []
    used: dict[Node, None] = {}
    for ref in refs([node.args, node.kwargs]):
        source = ref.node
        if source.graph is not graph or source.index >= node.index:
            problems.append(f"uses {source.name!r}, which is not an earlier node of this graph")
            continue
        meta = source.meta
        if ref.item is not None and not (isinstance(meta, tuple) and ref.item < len(meta)):
            problems.append(f"uses output {ref.item} of {source.name!r}, which has no such output")
        used[source] = None
    if list(used) != node._inputs:
        problems.append("its inputs do not match the nodes its arguments use")
    problems += [
        f"is not among the users of its input {source.name!r}"
        for source in used
        if node not in source._users
    ]
    return problems

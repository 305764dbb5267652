"""`Node` and `NodeRef`: the entries of a graph and the references between them."""

from __future__ import annotations

import enum
import keyword
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final, final

from customop.dispatch import OperatorHandle
from customop.trace._errors import fail
from customop.trace._meta import Meta, TensorMeta, format_meta
from customop.trace._values import Constant, float_code

if TYPE_CHECKING:
    from customop.trace._graph import Graph

__all__ = ["RESERVED_NAMES", "Node", "NodeKind", "NodeRef", "arg_code", "call_code", "op_path"]

#: Names the printed code uses itself (``ops.ns.op``, ``dtype(...)``, ``float('inf')``):
#: no node may take them, or its variable would shadow them.
RESERVED_NAMES: Final = frozenset({"ops", "dtype", "device", "float"})


class NodeKind(enum.Enum):
    """What a node is: an input, a recorded op call, or the graph's result."""

    PLACEHOLDER = "placeholder"
    CALL = "call"
    OUTPUT = "output"


@final
class NodeRef:
    """A use of an earlier node's value inside an argument structure: the whole
    value, or output ``item`` of a node whose op returned several."""

    __slots__ = ("index", "item", "node")

    node: Node
    index: int
    item: int | None

    def __init__(self, node: Node, item: int | None = None) -> None:
        self.node = node
        self.index = node.index
        self.item = item

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodeRef):
            return NotImplemented
        return self.node is other.node and self.item == other.item

    def __hash__(self) -> int:
        return hash((self.index, self.item))

    @property
    def meta(self) -> Meta:
        """The metadata of the value referred to."""
        meta = self.node.meta
        if self.item is None or not isinstance(meta, tuple):
            return meta
        return meta[self.item]

    @property
    def code(self) -> str:
        """``matmul``, or ``topk[1]`` for one output of several."""
        name = self.node.name
        return name if self.item is None else f"{name}[{self.item}]"

    def __repr__(self) -> str:
        return f"NodeRef({self.code})"


@final
class Node:
    """One entry of a `Graph`. Made by the graph's builder methods, never directly.

    ``args`` / ``kwargs`` hold constants and `NodeRef` objects; ``target`` is
    the op's qualified name (``"mylib::add.Tensor"``) and ``op`` its handle.
    ``inputs`` are the nodes this one reads, ``users`` those reading it, each
    in order of first use. Treat nodes as read-only.
    """

    __slots__ = (
        "_inputs",
        "_ref",
        "_users",
        "args",
        "graph",
        "index",
        "kind",
        "kwargs",
        "meta",
        "name",
        "op",
        "target",
    )

    graph: Graph
    index: int
    kind: NodeKind
    name: str
    target: str | None
    op: OperatorHandle | None
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    meta: Meta
    _inputs: list[Node]
    _users: list[Node]
    _ref: NodeRef

    def __init__(
        self,
        graph: Graph,
        kind: NodeKind,
        name: str,
        *,
        meta: Meta = None,
        target: str | None = None,
        op: OperatorHandle | None = None,
    ) -> None:
        self.graph = graph
        self.index = len(graph._nodes)
        self.kind = kind
        self.name = name
        self.meta = meta
        self.target = target
        self.op = op
        self.args = ()
        self.kwargs = {}
        self._inputs = []
        self._users = []
        self._ref = NodeRef(self)

    @property
    def inputs(self) -> tuple[Node, ...]:
        """The nodes this node reads, in argument order."""
        return tuple(self._inputs)

    @property
    def users(self) -> tuple[Node, ...]:
        """The nodes that read this node's value."""
        return tuple(self._users)

    @property
    def ref(self) -> NodeRef:
        """A reference to this node's whole value."""
        return self._ref

    def __getitem__(self, item: int) -> NodeRef:
        """A reference to output ``item`` of an op that returned several values."""
        meta = self.meta
        if not isinstance(meta, tuple) or not 0 <= item < len(meta):
            count = f"{len(meta)} outputs" if isinstance(meta, tuple) else "one output"
            fail(
                f"Node.__getitem__: node {self.name!r} has {count}, so it has no output "
                f"{item!r}. Only nodes whose metadata is a tuple (ops returning several "
                "values) can be indexed. Use the node itself, or an index below the count."
            )
        return NodeRef(self, item)

    def __iter__(self) -> Iterator[NodeRef]:
        """``values, indices = node``: one reference per output of a multi-output op."""
        meta = self.meta
        if not isinstance(meta, tuple):
            fail(
                f"Node.__iter__: node {self.name!r} has one output, so it cannot be unpacked. "
                "Only nodes whose metadata is a tuple (ops returning several values) can be. "
                "Use the node itself."
            )
        return iter([NodeRef(self, i) for i in range(len(meta))])

    def code(self) -> str:
        """The node as a line of the graph's code, without the metadata comment.

        Returns:
            The line of code.
        """
        if self.kind is NodeKind.PLACEHOLDER:
            return f"{self.name}: {self.meta}" if self.meta is not None else self.name
        if self.kind is NodeKind.OUTPUT:
            return f"return {arg_code(self.args[0])}"
        return f"{self.name} = {call_code(self)}"

    @property
    def meta_text(self) -> str:
        """The node's metadata as the graph prints it (``f32[2, 3]``)."""
        return format_meta(self.meta)

    def __repr__(self) -> str:
        if self.kind is NodeKind.CALL:
            what = f"call {self.target}"
        elif self.kind is NodeKind.PLACEHOLDER and isinstance(self.meta, TensorMeta):
            what = f"placeholder {self.meta}"
        else:
            what = self.kind.value
        return f"<Node {self.index} {self.name}: {what}>"


def op_path(target: str) -> str:
    """``ops.mylib.add.Tensor`` for ``mylib::add.Tensor``; ``.default`` for no overload."""
    namespace, _, rest = target.rpartition("::")
    name, _, overload = rest.partition(".")
    parts = [namespace, name, overload or "default"] if namespace else [name, overload or "default"]
    # As in customop.ops: a name that is a Python keyword is spelled with a trailing "_".
    return ".".join(["ops", *(p + "_" if keyword.iskeyword(p) else p for p in parts)])


def call_code(node: Node) -> str:
    """``ops.mylib.scale.default(x, factor=2.0)``."""
    parts = [arg_code(a) for a in node.args]
    parts += [f"{k}={arg_code(v)}" for k, v in node.kwargs.items()]
    return f"{op_path(node.target or '')}({', '.join(parts)})"


def arg_code(value: object) -> str:
    """An argument structure as Python code: refs by name, constants by value."""
    if isinstance(value, NodeRef):
        return value.code
    if isinstance(value, float):
        return float_code(value)
    if isinstance(value, Constant):
        return value.code()
    if isinstance(value, tuple):
        items = [arg_code(v) for v in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, list):
        return f"[{', '.join(arg_code(v) for v in value)}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{arg_code(k)}: {arg_code(v)}" for k, v in value.items()) + "}"
    return repr(value)

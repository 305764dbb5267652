"""`Graph`: placeholders, recorded op calls and one output, built node by node.

The builder methods are the tracer's hot path (DESIGN §8: a trace costs at
most 20 µs per recorded op, fake computation included), so they build plain
slotted objects and validate only what is cheap: pydantic models appear only
at the JSON edge (`_serialize`).
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeAlias, final

from customop.dispatch import Dispatcher, OperatorHandle
from customop.ops import OpDefinition, OpOverload
from customop.trace import _run
from customop.trace._assume import parse_condition
from customop.trace._errors import fail
from customop.trace._meta import Meta, MetaLike, TensorMeta
from customop.trace._node import RESERVED_NAMES, Node, NodeKind, NodeRef
from customop.trace._values import INLINE_TYPES, Constant, constant_of

# NOTE: `_serialize` and its pydantic models are imported where they are used:
# building those model classes is a tenth of `import customop` (issue #12). So
# are the checker and the printers (`_lint`, `_printer`, `_pictures`), which
# only a graph's user asks for: three modules fewer for `import customop`.
if TYPE_CHECKING:
    from customop.trace._models import GraphModel

__all__ = ["Graph", "OpLike"]


#: What `Graph.call` records: an ``ops.<ns>.<name>.<overload>``, a dispatcher
#: handle (what a boxed kernel receives) or a ``@custom_op`` function.
OpLike: TypeAlias = OpOverload | OperatorHandle | OpDefinition

_NOT_IDENTIFIER: Final = re.compile(r"\W")
_KEY_TYPES: Final = frozenset({type(None), bool, int, float, str})


@final
class Graph:
    """A recorded computation: placeholders (inputs), op calls and one output.

    Build one with `placeholder`, `call` and `output`; then print it, call it
    on real inputs, save it with `to_json`, or draw it with `to_mermaid` /
    `to_dot`. Nodes are appended only; the output comes last.
    """

    # __weakref__: jax.jit (and functools caches) hold the function they wrap weakly.
    __slots__ = (
        "__weakref__",
        "_assumptions",
        "_counts",
        "_nodes",
        "_output",
        "_plan",
        "_targets",
        "_used",
    )

    def __init__(self) -> None:
        self._nodes: list[Node] = []
        self._output: Node | None = None
        # Variable names taken, and the next suffix to try for each base name.
        self._used: set[str] = set(RESERVED_NAMES)
        self._counts: dict[str, int] = {}
        # op object -> (qualified name, handle, variable base name): looked up once per op.
        self._targets: dict[object, tuple[str, OperatorHandle, str]] = {}
        self._plan: _run.Plan | None = None
        self._assumptions: list[str] = []

    # -- building ------------------------------------------------------------------

    def placeholder(self, name: str, meta: MetaLike = None) -> Node:
        """Add an input named ``name`` (made a unique identifier) with its metadata.

        Args:
            name: the input's name.
            meta: its metadata: a `TensorMeta` (or something `meta_of` accepts), or None.

        Returns:
            The new placeholder node.
        """
        self._check_open("placeholder")
        checked = _checked_meta(meta)  # before the name is taken: a refused call leaves no trace
        node = Node(self, NodeKind.PLACEHOLDER, self._unique(name), meta=checked)
        self._nodes.append(node)
        return node

    def call(
        self,
        op: OpLike,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        meta: MetaLike = None,
    ) -> Node:
        """Record a call of ``op``. ``args`` / ``kwargs`` may hold nodes (or ``node[i]``)
        anywhere inside lists, tuples and dicts; other values become constants.
        ``meta`` describes the result: a `TensorMeta`, a tuple of them for an op
        returning several values, or None for a non-tensor result.

        Args:
            op: the operator: an `OpOverload`, a handle, or its qualified name.
            args: positional arguments.
            kwargs: keyword arguments.
            meta: the result's metadata.

        Returns:
            The new call node.
        """
        self._check_open("call")
        entry = self._targets.get(op)
        if entry is None:
            entry = self._targets[op] = _op_entry(op)
        target, handle, base = entry
        inputs: list[Node] = []
        converted = tuple([self._convert(a, inputs) for a in args])
        named = {k: self._convert(v, inputs) for k, v in kwargs.items()} if kwargs else {}
        checked = meta if type(meta) is TensorMeta else _checked_meta(meta)
        node = Node(self, NodeKind.CALL, self._fresh(base), meta=checked, target=target, op=handle)
        node.args = converted
        node.kwargs = named
        self._append(node, inputs)
        return node

    def output(self, value: Any) -> Node:
        """Set the graph's result: a node, or a tuple / list / dict of nodes and constants.

        Args:
            value: the result.

        Returns:
            The output node.
        """
        self._check_open("output")
        inputs: list[Node] = []
        converted = self._convert(value, inputs)
        node = Node(self, NodeKind.OUTPUT, self._fresh("output"))
        node.args = (converted,)
        self._append(node, inputs)
        self._output = node
        return node

    def assume(self, condition: str) -> None:
        """Add an assumption on sizes (``"s0 == s1"``), checked on every run.

        `trace` adds those that ``customop.check`` made while recording.

        Args:
            condition: comparisons of size expressions, joined by and / or / not.

        Raises:
            GraphError: ``condition`` is not such a condition.
        """
        parse_condition(condition)
        if condition not in self._assumptions:
            self._assumptions.append(condition)

    def _append(self, node: Node, inputs: list[Node]) -> None:
        unique = list(dict.fromkeys(inputs)) if len(inputs) > 1 else inputs
        node._inputs = unique
        for source in unique:
            source._users.append(node)
        self._nodes.append(node)

    def _check_open(self, api: str) -> None:
        if self._output is not None:
            fail(
                f"Graph.{api}: the graph already has its output (node "
                f"{self._output.name!r}). The output is the last node, so nothing can "
                "follow it. Build every node before calling graph.output(...)."
            )

    def _unique(self, name: str) -> str:
        """A fresh variable name from any text (a placeholder's name)."""
        return self._fresh(_identifier(name))

    def _fresh(self, base: str) -> str:
        """``base``, or ``base_1``, ``base_2``, ...: the first not taken. ``base`` is an
        identifier and no keyword (op bases are made so once, in `_op_entry`)."""
        used = self._used
        count = self._counts.get(base, 0)
        name = f"{base}_{count}" if count else base
        while name in used:
            count += 1
            name = f"{base}_{count}"
        self._counts[base] = count + 1
        used.add(name)
        return name

    def _convert(self, value: Any, inputs: list[Node]) -> Any:
        kind = type(value)
        if kind is Node:
            if value.graph is not self:
                _foreign(value)
            inputs.append(value)
            return value._ref
        if kind in INLINE_TYPES or kind is Constant:
            return value
        if kind is NodeRef:
            if value.node.graph is not self:
                _foreign(value.node)
            inputs.append(value.node)
            return value
        if isinstance(value, tuple):
            return tuple([self._convert(v, inputs) for v in value])
        if isinstance(value, list):
            return [self._convert(v, inputs) for v in value]
        if isinstance(value, dict):
            return {_key(k): self._convert(v, inputs) for k, v in value.items()}
        return constant_of(value)

    # -- inspecting ----------------------------------------------------------------

    @property
    def nodes(self) -> tuple[Node, ...]:
        """Every node, in the order they were added (placeholders, calls, output)."""
        return tuple(self._nodes)

    @property
    def assumptions(self) -> tuple[str, ...]:
        """Conditions on sizes the graph was traced under; `run` refuses inputs breaking one."""
        return tuple(self._assumptions)

    @property
    def placeholders(self) -> tuple[Node, ...]:
        """The graph's input nodes, in order."""
        return tuple(n for n in self._nodes if n.kind is NodeKind.PLACEHOLDER)

    @property
    def output_node(self) -> Node | None:
        """The output node, once `output` has been called."""
        return self._output

    def node(self, name: str) -> Node:
        """The node called ``name``.

        Args:
            name: the node's name, as the printed code shows it.

        Returns:
            The node.

        Raises:
            KeyError: no node has that name.
        """
        for node in self._nodes:
            if node.name == name:
                return node
        names = ", ".join(n.name for n in self._nodes) or "none"
        raise KeyError(
            f"Graph.node: no node named {name!r}. Nodes are named by the printed code's "
            f"variables. Names in this graph: {names}."
        )

    def lint(self) -> None:
        """Check the graph's invariants: references point backwards to nodes of this
        graph, users and inputs agree, names are unique, one output comes last.
        Raises `GraphError` listing every problem."""
        from customop.trace._lint import lint  # noqa: PLC0415 - see the NOTE at the top

        lint(self)

    # -- printing, running, saving, drawing ------------------------------------------

    def code(self) -> str:
        """The graph as Python-like code (what ``print(graph)`` shows).

        Returns:
            The code, one line per node, each call commented with its result's metadata.
        """
        from customop.trace._printer import graph_code  # noqa: PLC0415 - see the NOTE at the top

        return graph_code(self)

    def __str__(self) -> str:
        return self.code()

    def __repr__(self) -> str:
        calls = sum(1 for n in self._nodes if n.kind is NodeKind.CALL)
        inputs = sum(1 for n in self._nodes if n.kind is NodeKind.PLACEHOLDER)
        done = "output" if self._output is not None else "no output yet"
        return f"<Graph: {inputs} inputs, {calls} calls, {done}>"

    def run(self, *args: Any, dispatcher: Dispatcher | None = None) -> Any:
        """Run the recorded ops on ``args`` (one per placeholder) and return the output.

        With no ``dispatcher``, each node calls the op it recorded (or was bound
        to by `from_json`); with one, every op is looked up by name in it.

        Args:
            *args: the inputs, one per placeholder.
            dispatcher: look ops up by name in this dispatcher instead.

        Returns:
            The output, in the structure `output` recorded.
        """
        return _run.run(self, args, dispatcher)

    def __call__(self, *args: Any) -> Any:
        """``graph(*inputs)``: `run` with the recorded ops."""
        return _run.run(self, args, None)

    def to_model(self) -> GraphModel:
        """The graph as a pydantic model, the structure behind ``to_json``.

        Returns:
            A ``GraphModel`` that ``Graph.from_model`` turns back into an equal graph.
        """
        from customop.trace import _serialize  # noqa: PLC0415 - see the NOTE

        return _serialize.to_model(self)

    def to_json(self, *, indent: int | None = None) -> str:
        """The graph as JSON text: ops by qualified name, with their schemas.

        Args:
            indent: indentation for pretty-printing, or None for one line.

        Returns:
            The JSON text; `from_json` reads it back.
        """
        from customop.trace import _serialize  # noqa: PLC0415 - see the NOTE

        return _serialize.to_model(self).model_dump_json(indent=indent, exclude_defaults=True)

    @classmethod
    def from_model(cls, model: GraphModel, dispatcher: Dispatcher | None = None) -> Graph:
        """The graph of ``model``, its ops looked up in ``dispatcher`` (default: the global one).

        Args:
            model: the graph's model, as `to_model` returns it.
            dispatcher: where to look the ops up.

        Returns:
            The graph.

        Raises:
            GraphError: the model is not a valid graph.
        """
        from customop.trace import _serialize  # noqa: PLC0415 - see the NOTE

        graph = cls()
        _serialize.load(graph, model, dispatcher, "Graph.from_model")
        return graph

    @classmethod
    def from_json(cls, text: str | bytes, dispatcher: Dispatcher | None = None) -> Graph:
        """The graph saved by `to_json`, its ops looked up in ``dispatcher`` (default:
        ``customop.dispatcher``). A missing op raises `UnknownOperatorError`.

        Args:
            text: the JSON text.
            dispatcher: where to look the ops up.

        Returns:
            The graph.

        Raises:
            GraphError: the text is not a valid graph (naming the node and field).
            UnknownOperatorError: an op is not defined in ``dispatcher``.
        """
        from customop.trace import _serialize  # noqa: PLC0415 - see the NOTE

        graph = cls()
        model = _serialize.parse(text)
        _serialize.load(graph, model, dispatcher, "Graph.from_json")
        return graph

    def to_mermaid(self) -> str:
        """A Mermaid ``flowchart``: one box per node, labelled with its op and shape.

        Returns:
            The diagram's text, for a ``mermaid`` block or https://mermaid.live.
        """
        from customop.trace._pictures import mermaid  # noqa: PLC0415 - see the NOTE at the top

        return mermaid(self)

    def to_dot(self) -> str:
        """Graphviz DOT text of the same picture as `to_mermaid`.

        Returns:
            The DOT text, for ``dot -Tsvg``.
        """
        from customop.trace._pictures import dot  # noqa: PLC0415 - see the NOTE at the top

        return dot(self)


def _op_entry(op: object) -> tuple[str, OperatorHandle, str]:
    if isinstance(op, OperatorHandle):
        handle = op
    elif isinstance(op, OpOverload):
        handle = op.handle
    elif isinstance(op, OpDefinition):
        handle = op.operator
    else:
        raise TypeError(
            f"Graph.call: expected an operator, got {type(op).__name__} {op!r:.60}. A node "
            "records an op the dispatcher can run again. Pass ops.<ns>.<name>.<overload>, "
            "a @custom_op function, or an OperatorHandle (dispatcher.find_op(...))."
        )
    name = handle.name
    # The op's own name, trailing "_" of a mutating op included (torch.fx: `add_`).
    return str(name), handle, _identifier(name.name.lstrip("_") or "op")


def _identifier(text: str) -> str:
    """``text`` made a Python identifier that is not a keyword: ``"x y"`` -> ``"x_y"``."""
    if not text.isidentifier():
        text = _NOT_IDENTIFIER.sub("_", text) or "_"
        text = text if text.isidentifier() else f"_{text}"
    return f"{text}_" if keyword.iskeyword(text) else text


def _checked_meta(meta: object) -> Meta:
    if meta is None or isinstance(meta, TensorMeta):
        return meta
    if isinstance(meta, tuple | list) and all(m is None or isinstance(m, TensorMeta) for m in meta):
        return tuple(meta)
    raise TypeError(
        f"Graph: metadata must be a TensorMeta, a tuple of them (or None entries), or None; "
        f"got {meta!r:.80}. Printing and input checks read it. Build it with "
        "TensorMeta(shape, dtype, device) or TensorMeta.from_value(x)."
    )


def _key(key: object) -> object:
    if type(key) in _KEY_TYPES:
        return key
    fail(
        f"Graph: dict key {key!r:.60} ({type(key).__name__}) is not a constant. Keys of "
        "dicts inside arguments and outputs are saved as they are. Use str, int, float, "
        "bool or None keys."
    )


def _foreign(node: Node) -> NoReturn:
    fail(
        f"Graph: node {node.name!r} belongs to another graph. A graph refers only to its "
        "own earlier nodes. Record the value in this graph (graph.placeholder or graph.call)."
    )

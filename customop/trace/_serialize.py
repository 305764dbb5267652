"""Graph <-> `GraphModel`: saving by op name, loading by lookup in a dispatcher.

Loading checks what the builder guarantees by construction: names are unique
identifiers, references point to earlier nodes, an output (if any) comes last,
and every op exists with the schema it was saved with.
"""

from __future__ import annotations

import json
import keyword
import math
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn

from pydantic import ValidationError

from customop.dispatch import Dispatcher, OperatorHandle
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import SchemaError
from customop.ops import defined_names
from customop.schema import clip_repr
from customop.trace._errors import GraphError, fail, unknown_ops_error
from customop.trace._meta import Meta, TensorMeta
from customop.trace._models import (
    FORMAT,
    VERSION,
    ArgModel,
    ComplexArg,
    DeviceArg,
    DictArg,
    DtypeArg,
    FloatArg,
    GraphModel,
    ListArg,
    MetaModel,
    NodeModel,
    RefArg,
    SymArg,
    TensorMetaModel,
    TupleArg,
)
from customop.trace._node import RESERVED_NAMES, Node, NodeKind, NodeRef
from customop.trace._values import Constant, ConstantKind

if TYPE_CHECKING:
    from customop.trace._graph import Graph

__all__ = ["load", "parse", "to_model"]

_NON_FINITE: Final[dict[str, Literal["inf", "-inf", "nan"]]] = {
    "inf": "inf",
    "-inf": "-inf",
    "nan": "nan",
}


# -- saving ---------------------------------------------------------------------------


def to_model(graph: Graph) -> GraphModel:
    ops: dict[str, str] = {}
    nodes = []
    for node in graph._nodes:
        op, target = node.op, node.target
        if op is not None and target is not None and target not in ops and op.has_schema:
            ops[target] = str(op.schema)
        nodes.append(
            NodeModel(
                kind=node.kind,
                name=node.name,
                target=node.target,
                args=[_arg_model(a, node) for a in node.args],
                kwargs={k: _arg_model(v, node) for k, v in node.kwargs.items()},
                meta=_meta_model(node.meta),
            )
        )
    return GraphModel(
        format=FORMAT,
        version=VERSION,
        ops=dict(sorted(ops.items())),
        nodes=nodes,
        assumptions=list(graph._assumptions),
    )


def _meta_model(meta: Meta) -> MetaModel:
    if meta is None:
        return None
    if isinstance(meta, TensorMeta):
        return TensorMetaModel(shape=list(meta.shape), dtype=meta.dtype, device=meta.device)
    return [_meta_model(m) for m in meta]  # type: ignore[misc]  # one level: items are tensors


def _arg_model(value: Any, node: Node) -> ArgModel:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return FloatArg(kind="float", value=_NON_FINITE[repr(value)])
    if isinstance(value, complex):
        return ComplexArg(kind="complex", value=repr(value))
    if isinstance(value, NodeRef):
        return RefArg(kind="ref", node=value.index, item=value.item)
    if isinstance(value, tuple):
        return TupleArg(kind="tuple", items=[_arg_model(v, node) for v in value])
    if isinstance(value, list):
        return ListArg(kind="list", items=[_arg_model(v, node) for v in value])
    if isinstance(value, dict):
        items = [(_arg_model(k, node), _arg_model(v, node)) for k, v in value.items()]
        return DictArg(kind="dict", items=items)
    return _constant_model(value, node)


def _constant_model(value: Constant, node: Node) -> ArgModel:
    if value.kind is ConstantKind.DTYPE:
        return DtypeArg(kind="dtype", name=value.text)
    if value.kind is ConstantKind.DEVICE:
        return DeviceArg(kind="device", name=value.text)
    if value.kind is ConstantKind.SYM:
        return SymArg(kind="sym", expr=value.text)
    fail(
        f"Graph.to_json: node {node.name!r} uses the value {value.text}, which JSON cannot "
        "hold. A saved graph keeps only None, bool, int, float, complex, str, dtypes, "
        "devices, symbolic sizes and node values. Make the value a graph input "
        "(graph.placeholder) or pass a plain constant instead."
    )


# -- loading --------------------------------------------------------------------------


def parse(text: str | bytes) -> GraphModel:
    try:
        return GraphModel.model_validate_json(text)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # A union (a size is an int or a symbolic text) fails once per member: the
        # member's own check ("is not a dtype name") says more than "not an integer".
        first = next((e for e in errors if e["type"] == "value_error"), errors[0])
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        message = str(first["msg"]).removeprefix("Value error, ")
        raise GraphError(
            f"Graph.from_json: the text is not a saved graph: {_where(first['loc'], text)}: "
            f"{message}{more}. Graph.to_json writes this format ({FORMAT!r}, version "
            f"{VERSION}). Load text that Graph.to_json wrote, or fix the field named."
        ) from None


def _where(loc: tuple[int | str, ...], text: str | bytes) -> str:
    """``node 3 ('relu'), field meta.dtype`` for a pydantic error location."""
    # Drop the names pydantic gives union members and validators ("TensorMetaModel",
    # "constrained-int", "function-after[...]"): they are not fields of the text.
    parts = [
        str(part) if isinstance(part, int) or str(part).isidentifier() else clip_repr(part, 60)
        for part in loc
        if not (isinstance(part, str) and (part[:1].isupper() or "-" in part or "[" in part))
    ]
    if len(parts) >= 2 and parts[0] == "nodes" and parts[1].isdigit():
        name = _node_name(text, int(parts[1]))
        named = f" ({clip_repr(name, 60)})" if isinstance(name, str) else ""
        field = ".".join(parts[2:]) or "the node itself"
        return f"at node {parts[1]}{named}, field {field}"
    return f"at {'.'.join(parts) or 'the top level'}"


def _node_name(text: str | bytes, index: int) -> object:
    """The ``name`` the text gives node ``index``, if the text is JSON that has one."""
    try:
        nodes = json.loads(text).get("nodes")
        return nodes[index].get("name")
    except (ValueError, RecursionError, AttributeError, IndexError, TypeError, KeyError):
        return None


def load(graph: Graph, model: GraphModel, dispatcher: Dispatcher | None, api: str) -> None:
    """Fill the empty ``graph`` with ``model``'s nodes, ops looked up in ``dispatcher``."""
    found = _handles(model, default_dispatcher if dispatcher is None else dispatcher, api)
    last = len(model.nodes) - 1
    for index, spec in enumerate(model.nodes):
        _check_node(graph, spec, index, last, api)
        handle = found.get(spec.target) if spec.target is not None else None
        node = Node(
            graph, spec.kind, spec.name, meta=_meta(spec.meta), target=spec.target, op=handle
        )
        inputs: list[Node] = []
        node.args = tuple([_arg(a, graph, node, inputs, api) for a in spec.args])
        node.kwargs = {k: _arg(v, graph, node, inputs, api) for k, v in spec.kwargs.items()}
        graph._used.add(spec.name)
        graph._append(node, inputs)
        if spec.kind is NodeKind.OUTPUT:
            graph._output = node
    for condition in model.assumptions:
        graph.assume(condition)


def _handles(model: GraphModel, dispatcher: Dispatcher, api: str) -> dict[str, OperatorHandle]:
    found: dict[str, OperatorHandle] = {}
    missing: dict[str, str] = {}
    for spec in model.nodes:
        target = spec.target
        if spec.kind is not NodeKind.CALL or target is None or target in found:
            continue
        try:
            handle = dispatcher.find_op(target)
        except SchemaError:
            fail(
                f"{api}: node {spec.name!r} has target {target!r}, which is not an operator "
                "name. Ops are saved by qualified name. Write 'namespace::name' or "
                "'namespace::name.overload' (the default overload has none)."
            )
        if handle is None:
            missing.setdefault(target, spec.name)
            continue
        saved = model.ops.get(target)
        if saved is not None and str(handle.schema) != saved:
            _schema_changed(api, target, saved, str(handle.schema))
        found[target] = handle
    if missing:
        raise unknown_ops_error(api, missing, [str(n) for n in defined_names(dispatcher)])
    return found


def _schema_changed(api: str, target: str, saved: str, now: str) -> NoReturn:
    fail(
        f"{api}: operator {target!r} is now defined as {clip_repr(now)}, but the graph was "
        f"saved with {clip_repr(saved)}. The recorded arguments follow the saved schema "
        "and may not bind to the new one. Trace the function again, or load with a "
        "dispatcher that defines the saved schema."
    )


def _check_node(graph: Graph, spec: NodeModel, index: int, last: int, api: str) -> None:
    where = f"{api}: node {index} ({spec.name!r})"
    name = spec.name
    if not name.isidentifier() or keyword.iskeyword(name) or name in RESERVED_NAMES:
        fail(
            f"{where}: its name is not a usable variable name. Node names are the variables "
            f"of the printed code. Use an identifier that is not a keyword nor one of "
            f"{', '.join(sorted(RESERVED_NAMES))}."
        )
    if name in graph._used:
        fail(f"{where}: the name is used twice. Each node needs its own name. Rename one.")
    kind = spec.kind
    if (kind is NodeKind.CALL) != (spec.target is not None):
        fail(f"{where}: a call node needs a target, other nodes have none. Fix the target.")
    if kind is NodeKind.PLACEHOLDER and (spec.args or spec.kwargs):
        fail(f"{where}: a placeholder takes no arguments. Remove its args and kwargs.")
    if kind is NodeKind.OUTPUT and (len(spec.args) != 1 or spec.kwargs or index != last):
        fail(
            f"{where}: an output has exactly one argument (the value) and is the last node. "
            "Only one output ends a graph. Fix the output node."
        )


def _meta(model: MetaModel) -> Meta:
    if model is None:
        return None
    if isinstance(model, TensorMetaModel):
        return TensorMeta(model.shape, model.dtype, model.device)
    return tuple([None if m is None else TensorMeta(m.shape, m.dtype, m.device) for m in model])


def _arg(value: ArgModel, graph: Graph, node: Node, inputs: list[Node], api: str) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, RefArg):
        return _ref(value, graph, node, inputs, api)
    if isinstance(value, TupleArg):
        return tuple([_arg(v, graph, node, inputs, api) for v in value.items])
    if isinstance(value, ListArg):
        return [_arg(v, graph, node, inputs, api) for v in value.items]
    if isinstance(value, DictArg):
        return {_key(k, node, api): _arg(v, graph, node, inputs, api) for k, v in value.items}
    if isinstance(value, FloatArg):
        return float(value.value)
    if isinstance(value, ComplexArg):
        return _complex(value.value, node, api)
    if isinstance(value, DtypeArg):
        return Constant(ConstantKind.DTYPE, value.name)
    if isinstance(value, DeviceArg):
        return Constant(ConstantKind.DEVICE, value.name)
    return Constant(ConstantKind.SYM, value.expr)


def _ref(value: RefArg, graph: Graph, node: Node, inputs: list[Node], api: str) -> NodeRef:
    if value.node >= node.index:
        fail(
            f"{api}: node {node.index} ({node.name!r}) refers to node {value.node}, which "
            "does not come before it. A node may only use the values of earlier nodes. "
            "Fix the reference."
        )
    source = graph._nodes[value.node]
    meta = source.meta
    if value.item is not None and not (isinstance(meta, tuple) and value.item < len(meta)):
        fail(
            f"{api}: node {node.index} ({node.name!r}) uses output {value.item} of node "
            f"{source.name!r}, which has no such output. Only ops with several outputs "
            "(tuple metadata) can be indexed. Fix the item or the metadata."
        )
    inputs.append(source)
    return NodeRef(source, value.item)


def _key(key: ArgModel, node: Node, api: str) -> object:
    if key is None or isinstance(key, bool | int | float | str):
        return key
    if isinstance(key, FloatArg):
        return float(key.value)
    fail(
        f"{api}: node {node.name!r} has a dict key of kind {key.kind!r}. Dict keys are "
        "plain constants so that they stay hashable. Use a str, int, float, bool or null key."
    )


def _complex(text: str, node: Node, api: str) -> complex:
    try:
        return complex(text)
    except ValueError:
        fail(
            f"{api}: node {node.name!r} has the complex constant {text!r}, which does not "
            "parse. Complex constants are saved as Python writes them. Write e.g. '(1+2j)'."
        )

"""Running a graph: check the inputs against the placeholders, then call each op.

Input rules (also in docs/tracing.md): an input for a tensor placeholder must
be a tensor of the same dtype and rank. A concrete size must match; a symbolic
one (``s0``) accepts any size, but every entry spelled by the same symbol must
get the same size, since the recorded ops may rely on it (``add(x, y)`` with
both ``[s0]``). Entries that are expressions (``2*s0``) are not checked. The
device is not checked: a graph may run on another device than it was traced
on. Placeholders without tensor metadata take any value.

The ops to call are resolved once per dispatcher and registration epoch (a
plan), so a re-run costs the kernel calls plus a walk over each node's args.
A new plan keeps the bound overload of every op whose def is unchanged, so
a registration elsewhere costs a lookup per op, never new call code.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from customop.dispatch import Dispatcher, OperatorHandle, epoch
from customop.ops import OpOverload, bind_overload, defined_names
from customop.trace._assume import check_assumptions
from customop.trace._errors import fail, unknown_ops_error
from customop.trace._meta import TensorMeta, dtype_name, size_entry
from customop.trace._node import Node, NodeKind, NodeRef, op_path
from customop.trace._symbolic import evaluate
from customop.trace._values import INLINE_TYPES, ConstantKind

if TYPE_CHECKING:
    from customop.trace._graph import Graph

__all__ = ["Plan", "resolve", "run"]


class Step(NamedTuple):
    node: Node
    fn: OpOverload


class Plan(NamedTuple):
    dispatcher: Dispatcher | None
    token: object
    steps: tuple[Step, ...]


def run(graph: Graph, args: Sequence[Any], dispatcher: Dispatcher | None) -> Any:
    output = graph._output
    if output is None:
        fail(
            "Graph.run: the graph has no output. Running returns the output, so it must be "
            "set. Call graph.output(value) after the last op."
        )
    placeholders = [n for n in graph._nodes if n.kind is NodeKind.PLACEHOLDER]
    if len(args) != len(placeholders):
        _count_error(placeholders, args)
    env: list[Any] = [None] * len(graph._nodes)
    sizes = Sizes()
    for node, value in zip(placeholders, args, strict=True):
        if isinstance(node.meta, TensorMeta):
            _check_input(node.name, node.meta, value, sizes)
        env[node.index] = value
    bindings = sizes.values
    if graph._assumptions:
        check_assumptions(graph._assumptions, bindings)
    for node, fn in _plan(graph, dispatcher).steps:
        call_args = [_fill(a, env, bindings) for a in node.args]
        call_kwargs = {k: _fill(v, env, bindings) for k, v in node.kwargs.items()}
        try:
            env[node.index] = fn(*call_args, **call_kwargs)
        except Exception as exc:
            note = f"(while running node {node.name!r}: {node.code()})"
            if sys.version_info >= (3, 11):
                exc.add_note(note)
            else:  # 3.10 has no add_note; tracebacks show __notes__ from 3.11 (PEP 678)
                exc.__notes__ = [*getattr(exc, "__notes__", ()), note]
            raise
    return _fill(output.args[0], env, bindings)


def _fill(value: Any, env: list[Any], bindings: dict[str, Any]) -> Any:
    kind = type(value)
    if kind is NodeRef:
        result = env[value.index]
        return result if value.item is None else result[value.item]
    if kind in INLINE_TYPES:
        return value
    if kind is tuple:
        return tuple([_fill(v, env, bindings) for v in value])
    if kind is list:
        return [_fill(v, env, bindings) for v in value]
    if kind is dict:
        return {k: _fill(v, env, bindings) for k, v in value.items()}
    if value.kind is ConstantKind.SYM:
        return evaluate(value.text, bindings)
    return value.live()


def _plan(graph: Graph, dispatcher: Dispatcher | None) -> Plan:
    plan = graph._plan
    token = epoch.token
    if plan is None or plan.token is not token or plan.dispatcher is not dispatcher:
        calls = [n for n in graph._nodes if n.kind is NodeKind.CALL]
        handles = resolve(calls, dispatcher, "Graph.run")
        kept = {} if plan is None else {step.fn.handle: step.fn for step in plan.steps}
        # One bound overload per op, however many nodes call it.
        bound = {h: _bound(h, kept.get(h)) for h in set(handles)}
        steps = tuple(Step(n, bound[h]) for n, h in zip(calls, handles, strict=True))
        plan = graph._plan = Plan(dispatcher, token, steps)
    return plan


def _bound(handle: OperatorHandle, kept: OpOverload | None) -> OpOverload:
    """``kept`` while it was bound for the op's current def, else a new binding."""
    if kept is not None and kept.schema is handle._entry.schema:
        return kept
    return bind_overload(handle, op_path(str(handle.name)))


def resolve(calls: Sequence[Node], dispatcher: Dispatcher | None, api: str) -> list[OperatorHandle]:
    """The handle each call node runs: its recorded op, or its target in ``dispatcher``.

    Raises `UnknownOperatorError` naming every op that is missing (or lost its def).
    """
    handles: list[OperatorHandle] = []
    missing: dict[str, str] = {}
    for node in calls:
        target = node.target or ""
        handle = node.op if dispatcher is None else dispatcher.find_op(target)
        if handle is None or not handle.has_schema:
            missing.setdefault(target, node.name)
        else:
            handles.append(handle)
    if missing:
        known = _defined(dispatcher if dispatcher is not None else _any_dispatcher(calls))
        raise unknown_ops_error(api, missing, known)
    return handles


def _any_dispatcher(calls: Sequence[Node]) -> Dispatcher | None:
    return next((n.op.dispatcher for n in calls if n.op is not None), None)


def _defined(dispatcher: Dispatcher | None) -> list[str]:
    if dispatcher is None:
        return []
    return [str(name) for name in defined_names(dispatcher)]


class Sizes:
    """The sizes of one run's symbols (``s0`` -> 4), and which input dimension set each."""

    __slots__ = ("origins", "values")

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.origins: dict[str, tuple[str, int]] = {}

    def bind(self, name: str, meta: TensorMeta, dim: int, size: Any) -> None:
        symbol = str(meta.shape[dim])
        if symbol not in self.values:
            self.values[symbol] = size
            self.origins[symbol] = (name, dim)
            return
        bound = self.values[symbol]
        if size_entry(bound) != size_entry(size):
            first, first_dim = self.origins[symbol]
            fail(
                f"Graph.run: input {name!r} has size {size} in dimension {dim} ({meta}), but "
                f"{symbol} is {bound} from input {first!r} dimension {first_dim}. The graph "
                "was traced with these sizes equal, and its ops may rely on it. Pass inputs "
                f"whose sizes spelled {symbol} agree."
            )


def _check_input(name: str, meta: TensorMeta, value: Any, sizes: Sizes) -> None:
    try:
        shape, dtype = value.shape, value.dtype
    except AttributeError:
        fail(
            f"Graph.run: input {name!r} must be a tensor {meta}, got "
            f"{type(value).__name__} {value!r:.40}. The graph was traced with a tensor there. "
            "Pass an array of that dtype and rank."
        )
    got = dtype_name(dtype)
    if got != meta.dtype:
        fail(
            f"Graph.run: input {name!r} has dtype {got}, but the graph was traced with "
            f"{meta.dtype} ({meta}). The recorded ops were chosen and checked for that dtype. "
            f"Convert the input (e.g. {name}.astype({meta.dtype!r})), or trace again with "
            f"{got} inputs."
        )
    if len(shape) != meta.rank:
        fail(
            f"Graph.run: input {name!r} has rank {len(shape)} (shape {tuple(shape)}), but "
            f"the graph expects rank {meta.rank} ({meta}). Every recorded op was traced "
            f"for that many dimensions. Pass a {meta.rank}-d input, or trace again with this "
            "rank."
        )
    for dim, (want, size) in enumerate(zip(meta.shape, shape, strict=True)):
        if isinstance(want, int):
            if size_entry(size) != want:
                _size_error(name, meta, dim, size)
        elif want.isidentifier():
            sizes.bind(name, meta, dim, size)


def _size_error(name: str, meta: TensorMeta, dim: int, size: Any) -> NoReturn:
    expected = "[" + ", ".join(map(str, meta.shape)) + "]"
    fail(
        f"Graph.run: input {name!r} has size {size} in dimension {dim}, but the graph was "
        f"traced with size {meta.shape[dim]} there ({meta}). Only symbolic sizes (like s0) "
        f"may change between runs. Pass an input of shape {expected}, or trace with a "
        "dynamic size for that dimension."
    )


def _count_error(placeholders: list[Node], args: Sequence[Any]) -> NoReturn:
    names = ", ".join(n.name for n in placeholders)
    fail(
        f"Graph.run: expected {len(placeholders)} inputs ({names}), got {len(args)}. A "
        "graph takes one value per placeholder, in order. Pass exactly those inputs."
    )

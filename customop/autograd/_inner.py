"""Recording a call that a transform above the Autograd keys computes its own way (vmap).

NOTE: how ``customop.vmap`` and the transforms nest. A ``vmap`` remembers how
many tapes recorded when it started (`tape_depth`): those belong to the
transforms around it (``grad(vmap(f))``), the tapes after them to transforms
entered inside it (``vmap(grad(f))``). Their wrappers nest the same way: an
outer tape's `Tracked` wrappers sit inside the batched values' physical arrays,
an inner tape's wrap the batched values themselves. The batching interpreter
sits above the Autograd keys, so a call reaches it first; it hands the call to
`record_inner`, which

1. takes the inner tapes' wrappers off the arguments (refusing, as `record`
   does, one that plain code made from a tracked value) and keeps the outer
   tapes' on, so the batched computation (the op's rule, or the loop) runs on
   values the outer tapes follow, with only those tapes active: they record
   each op it calls, on physical arrays;
2. records the call as the user wrote it (with the op's formula) on each
   inner tape that tracks an input, wrapping the batched result as `record`
   wraps a kernel's. Its ``setup_context`` sees the values as the tapes
   outside that one see them, as for nested transforms (`Nested`).

`lost_gradient` lets vmap refuse a rule whose output the outer tapes cannot
follow (plain array code on a tracked value), which would otherwise count as
a constant and give a zero gradient; `check_input` refuses, naming the op
called, an argument whose physical array plain code made from a tracked value
before vmap's own ops (which move batch dimensions) meet it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from customop.autograd._engine import refuse_input
from customop.autograd._tape import (
    ACTIVE,
    Nested,
    Tape,
    bind_inputs,
    differentiable,
    tensor_positions,
)
from customop.autograd._tracked import Tracked, wrap
from customop.dispatch import OperatorHandle
from customop.tensor import FakeTensor

if TYPE_CHECKING:
    from customop.autograd._formula import AutogradFormula

__all__ = ["check_input", "lost_gradient", "record_inner", "tape_depth"]

#: ``compute(args, kwargs)``: the call's value, given its arguments without inner wrappers.
Compute = Callable[[tuple[Any, ...], dict[str, Any]], Any]


def tape_depth() -> int:
    """How many tapes record now: a transform entered inside them remembers it."""
    return len(ACTIVE.get())


def check_input(op: OperatorHandle, name: str, value: Any) -> None:
    """Refuse, while a transform records, ``op``'s input ``name`` when plain code made it
    from a tracked value (as `record` does): for a transform that computes the call its
    own way, so the message names ``op`` rather than an op of its own the value meets."""
    if isinstance(value, Tracked) and value._made is not None:
        tapes = ACTIVE.get()
        if tapes:
            refuse_input(op, name, value, tapes)


def _follows(tape: Tape, value: Any) -> bool:
    return id(value) in tape.vars or id(value) in tape.seen


def lost_gradient(depth: int, inputs: list[Any], outputs: list[Any]) -> int | None:
    """The index of a float output that no tape among the first ``depth`` follows although
    one of ``inputs`` is tracked there: it was computed from a tracked value without ops
    (plain array code), so its gradient would silently be zero. None when there is none."""
    tapes = ACTIVE.get()[:depth]
    watching = [t for t in tapes if any(id(value) in t.vars for value in inputs)]
    if not watching:
        return None
    for index, value in enumerate(outputs):
        if differentiable(value) and not any(_follows(t, value) for t in watching):
            return index
    return None


def record_inner(
    formula: AutogradFormula | None,
    op: OperatorHandle,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    compute: Compute,
    depth: int,
) -> Any:
    """Compute a call under the first ``depth`` tapes, then record it on the others.

    See the module docstring: ``compute`` gets the arguments with the inner
    tapes' wrappers taken off and runs with only the outer tapes active; the
    result comes back wrapped for the inner tapes that track an input.
    """
    tapes = ACTIVE.get()
    outer, inner = tapes[:depth], tapes[depth:]
    positions = tensor_positions(op.schema)
    raw_args, raw_kwargs = _unwrapped(op, positions, args, kwargs, tapes=tapes, outer=outer)
    token = ACTIVE.set(outer)
    try:
        raw = compute(raw_args, raw_kwargs)
    finally:
        ACTIVE.reset(token)
    if not inner:
        return raw
    token = ACTIVE.set(())
    try:
        given = (args, kwargs, raw_args, raw_kwargs)
        return _record(op, formula, positions, given, raw, tapes=tapes, depth=depth)
    finally:
        ACTIVE.reset(token)


def _record(
    op: OperatorHandle,
    formula: AutogradFormula | None,
    positions: tuple[tuple[int, str, bool], ...],
    given: tuple[tuple[Any, ...], dict[str, Any], tuple[Any, ...], dict[str, Any]],
    raw: Any,
    *,
    tapes: tuple[Tape, ...],
    depth: int,
) -> Any:
    """Record a computed call on the inner tapes (``tapes[depth:]``) that track an input."""
    args, kwargs, raw_args, raw_kwargs = given
    inner = tapes[depth:]
    found = [tape.tracked(positions, args, kwargs) for tape in inner]
    if all(in_vars is None for in_vars in found):
        for tape in inner:
            tape.see(raw)
        return raw
    result = _wrapped(raw)
    schema = op.schema
    inputs = bind_inputs(schema, args, kwargs)
    raw_inputs = bind_inputs(schema, raw_args, raw_kwargs)
    for index, (tape, in_vars) in enumerate(zip(inner, found, strict=True)):
        if in_vars is None:
            tape.see(result)
            continue
        nested = None
        if index:  # inside another inner tape: the wrappers, as `record` gives them
            nested = Nested(inputs, result, tapes[: depth + index])
        elif depth:  # the outer tapes see the batched values without inner wrappers
            nested = Nested(raw_inputs, raw, tapes[:depth])
        tape.record(op, formula, in_vars, raw_inputs, result=result, raw_result=raw, nested=nested)
    return result


def _wrapped(raw: Any) -> Any:
    """A computed result as the inner tapes' ``fn`` gets it: float values in new wrappers.

    An outer tape's wrapper (an unbatched output the rule made with ops) stays
    as it is, so the outer tapes keep following it: the inner ones track it too,
    as nested transforms share wrappers.
    """
    kind = type(raw)
    if kind is tuple or kind is list:
        return kind([_wrapped(item) for item in raw])
    if isinstance(raw, Tracked | FakeTensor) or not differentiable(raw):
        return raw
    return wrap(raw)


def _unwrapped(
    op: OperatorHandle,
    positions: tuple[tuple[int, str, bool], ...],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    tapes: tuple[Tape, ...],
    outer: tuple[Tape, ...],
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments without the wrappers no outer tape tracks (refusing derived ones)."""
    plain = list(args)
    named = dict(kwargs)
    for index, name, is_list in positions:
        if index < len(plain):
            plain[index] = _argument(op, name, plain[index], is_list, tapes=tapes, outer=outer)
        elif name in named:
            named[name] = _argument(op, name, named[name], is_list, tapes=tapes, outer=outer)
    return tuple(plain), named


def _argument(
    op: OperatorHandle,
    name: str,
    value: Any,
    is_list: bool,
    *,
    tapes: tuple[Tape, ...],
    outer: tuple[Tape, ...],
) -> Any:
    if not is_list:
        return _bare(op, name, value, tapes, outer)
    if type(value) is not list and type(value) is not tuple:
        return value  # None, for a Tensor[]? argument
    items = [_bare(op, f"{name}[{i}]", item, tapes, outer) for i, item in enumerate(value)]
    return type(value)(items)


def _bare(
    op: OperatorHandle, name: str, value: Any, tapes: tuple[Tape, ...], outer: tuple[Tape, ...]
) -> Any:
    """``value`` without its wrapper, unless an outer tape tracks that wrapper."""
    if not isinstance(value, Tracked):
        return value
    if value._made is not None and tapes:
        refuse_input(op, name, value, tapes)
    if any(id(value) in tape.vars for tape in outer):
        return value  # an outer tape follows it through the computation
    return value._raw

"""How the transforms use the dispatcher: the formula kernels' recorder and the fallback.

NOTE: how the Autograd keys get activated. Every array carries its backend's
autograd key (``AutogradCPU`` for numpy), and those keys keep their default
fallthrough, so a call outside a transform never stops there and keeps its
generated fast path, whether or not the op has a formula. Formulas live on
``AutogradOther`` (`FORMULA_KEY`), which no array carries; a transform
enters ``include_keys(AutogradOther)`` around the forward it records, as
``trace`` includes ``Tracer``. Inside, an op with a formula runs its
`AutogradFormula` kernel (which calls `record` here through the engine
hook), an op without one runs the dispatcher's AutogradOther fallback, which
`install` makes `record_untracked` in place of the default fallthrough, so a
gradient through such an op is caught before any backward runs, and a
CompositeImplicitAutograd op decomposes into ops that record themselves.
The alternative, a JAX-style wrapper type carrying the key, would have to
forward every array method and unwrap at every kernel, and would hand the
tracer values it does not know; identity tracking keeps every backend's own
arrays (see `_tape`).

Both kernels compute below AutogradOther with no tape active (kernels that
call ops are not recorded twice, as torch's AutoDispatchBelowAutograd), then
record the call on every active tape that tracks one of its inputs: nested
transforms share one forward.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from customop.autograd._tape import ACTIVE, Tape, bind_inputs, differentiable, tensor_positions
from customop.dispatch import DispatchKey, DispatchKeySet, OperatorHandle, below, keyset_from_bits

if TYPE_CHECKING:
    from customop.autograd._formula import AutogradFormula

__all__ = [
    "FORMULA_KEY",
    "lost_gradient",
    "record",
    "record_inner",
    "record_untracked",
    "tape_depth",
]

#: The key formulas are registered on and transforms include (see `_formula`).
FORMULA_KEY: Final = DispatchKey.AutogradOther

_BELOW_BITS: Final = below(FORMULA_KEY).bits
_set_active = ACTIVE.set
_reset_active = ACTIVE.reset
_get_active = ACTIVE.get


def record(
    formula: AutogradFormula | None,
    op: OperatorHandle,
    keyset: DispatchKeySet,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Compute below the Autograd keys, then record the call on the tapes that track it."""
    tapes = _get_active()
    lower = keyset_from_bits(keyset.bits & _BELOW_BITS)
    if not tapes:
        return op.redispatch(lower, *args, **kwargs)
    token = _set_active(())
    try:
        result = op.redispatch(lower, *args, **kwargs)
        _note(tapes, formula, op, args, kwargs, result=result)
    finally:
        _reset_active(token)
    return result


def _note(
    tapes: tuple[Tape, ...],
    formula: AutogradFormula | None,
    op: OperatorHandle,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    result: Any,
) -> None:
    """Record a computed call on each of ``tapes`` that tracks one of its inputs."""
    positions = tensor_positions(op.schema)
    inputs: tuple[Any, ...] | None = None
    for tape in tapes:
        in_vars = tape.tracked(positions, args, kwargs)
        if in_vars is None:
            tape.see(result)
            continue
        if inputs is None:
            inputs = bind_inputs(op.schema, args, kwargs)
        tape.record(op, formula, inputs, in_vars, result)


def lost_gradient(depth: int, inputs: list[Any], outputs: list[Any]) -> int | None:
    """The index of a float output that no tape among the first ``depth`` tracks although
    one of ``inputs`` is tracked there: it was computed from a tracked value without ops
    (plain array code), so its gradient would silently be zero. None when there is none."""
    tapes = _get_active()[:depth]
    watching = [t for t in tapes if any(id(value) in t.vars for value in inputs)]
    if not watching:
        return None
    for index, value in enumerate(outputs):
        if differentiable(value) and not any(id(value) in t.vars for t in watching):
            return index
    return None


def tape_depth() -> int:
    """How many tapes record now: a transform entered inside them remembers it."""
    return len(_get_active())


def record_inner(
    formula: AutogradFormula | None,
    op: OperatorHandle,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    compute: Callable[[], Any],
    depth: int,
) -> Any:
    """Run ``compute`` under the first ``depth`` tapes only, then record the call on the rest.

    For a transform that computes a call its own way above the Autograd keys
    (``customop.vmap`` batches it): the tapes entered inside it (a ``grad``
    inside a ``vmap``) record the call as it was made, with ``formula``, while
    the ops ``compute`` runs are recorded by the tapes entered before it (a
    ``grad`` of the ``vmap``), as nested transforms see each other in torch.
    """
    tapes = _get_active()
    inner = tapes[depth:]
    token = _set_active(tapes[:depth])
    try:
        result = compute()
    finally:
        _reset_active(token)
    if inner:
        token = _set_active(())
        try:
            _note(inner, formula, op, args, kwargs, result=result)
        finally:
            _reset_active(token)
    return result


def record_untracked(op: OperatorHandle, keyset: DispatchKeySet, *args: Any, **kwargs: Any) -> Any:
    """The Autograd fallback: ops without a formula are recorded as nodes backward refuses."""
    return record(None, op, keyset, args, kwargs)

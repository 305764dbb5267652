"""The batching interpreter: the ``Batched`` key's fallback (torch's ``FuncTorchBatched``).

Every op call with a `BatchedArray` argument reaches `interpret` (the array
type carries only the ``Batched`` key), and so does every call inside a
``vmap`` (which includes the key, as torch's ``FuncTorchVmapMode``, so that
random ops with unbatched inputs still honour ``randomness``). For a call:

1. the levels it involves: those its batched arguments have, and for a
   random op (tagged ``nondeterministic_seeded``) every level whose
   randomness is ``"different"``; none: the call runs below ``Batched``;
2. transforms entered inside those levels (a ``grad`` inside the ``vmap``)
   record the call as written, through ``customop.autograd.record_inner``,
   while the batched computation's own ops are recorded by the tapes of the
   transforms outside (a ``grad`` of the ``vmap``). Such an inner transform
   hands ``fn`` its wrappers around the batched values, so the levels are
   looked for inside wrappers too, and the computation gets the batched values
   without them (a wrapper of a transform that has ended is taken off too);
3. an op without a rule that decomposes (a CompositeImplicitAutograd
   kernel) runs its decomposition on the batched values; otherwise the
   computation runs below ``Batched`` (`_batching`): the op's rule, or the
   loop fallback.

The key sits above ``Tracer`` and the Autograd keys, as functorch's keys do:
a ``trace`` of a vmapped function records the batched ops, and a ``grad`` of
one differentiates them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from customop.autograd import formula_of, record_inner, tape_depth, unwrap
from customop.dispatch import DispatchKey, DispatchKeySet, OperatorHandle
from customop.vmap._arith import refuse
from customop.vmap._batching import run_batched
from customop.vmap._plan import LIST_KINDS, Plan, plan_of
from customop.vmap._rule import VMAP_RULE
from customop.vmap._value import LEVELS, PHYSICAL, BatchedArray, Level, Physical

__all__ = ["RANDOM_TAG", "interpret"]

#: The tag of ops whose results are random (torch's ``Tag.nondeterministic_seeded``).
RANDOM_TAG: Final = "nondeterministic_seeded"
_BELOW: Final = DispatchKeySet.full().below(DispatchKey.Batched)
_DECOMPOSITION: Final = DispatchKeySet(DispatchKey.AutogradOther)
_CIA: Final = DispatchKey.CompositeImplicitAutograd
_physical: Final = PHYSICAL.get


def _batched(value: Any) -> bool:
    return type(value) is BatchedArray or type(unwrap(value)) is BatchedArray


def _any_batched(values: Iterable[Any]) -> bool:
    """Whether a batched value (or an autograd wrapper of one) is among ``values``, or in
    a list among them: a quick look before the op's `Plan` says where its tensors are."""
    for value in values:
        if type(value) is list or type(value) is tuple:
            if any(_batched(item) for item in value):
                return True
        elif _batched(value):
            return True
    return False


def _found_levels(plan: Plan, values: list[Any]) -> tuple[dict[int, Level], bool]:
    """The levels the batched arguments have, by id (inside wrappers too), and whether a
    tensor argument is an autograd wrapper."""
    found: dict[int, Level] = {}
    wrapped = False
    for index, kind in plan.tensors:
        value = values[index]
        items = (value or ()) if kind in LIST_KINDS else (value,)
        for item in items:
            batched = item
            if type(item) is not BatchedArray:
                batched = unwrap(item)
                if batched is item:
                    continue
                wrapped = True
                if type(batched) is not BatchedArray:
                    continue
            for level in batched.levels:
                found[id(level)] = level
    return found, wrapped


def _unwrapped(plan: Plan, values: list[Any]) -> list[Any]:
    """``values`` with every wrapper taken off: no transform records (they have ended)."""
    plain = list(values)
    for index, kind in plan.tensors:
        value = plain[index]
        if kind in LIST_KINDS:
            plain[index] = value if value is None else [unwrap(item) for item in value]
        else:
            plain[index] = unwrap(value)
    return plain


def _check_live(plan: Plan, found: dict[int, Level], active: tuple[Level, ...]) -> None:
    if len(found) == 1 and active and next(iter(found.values())) is active[-1]:
        return  # the common case: values of the innermost running vmap
    live = {id(level) for level in active}
    for key, level in found.items():
        if key not in live:
            refuse(
                f"{plan.name} got a batched value of {level!r}, which has ended",
                "A batched value belongs to the vmap call that made it; outside it, it has "
                "no batch to stand for",
                "Return it from the vmapped function (vmap unbatches its outputs) instead of "
                "keeping it",
            )


def _random_levels(op: OperatorHandle, active: tuple[Level, ...]) -> list[Level]:
    """The levels a random op involves whatever its inputs; raises for ``"error"``."""
    for level in active:
        if level.randomness == "error":
            refuse(
                f"{op.name} is a random op (tagged {RANDOM_TAG!r}) called inside {level!r} "
                "with randomness='error'",
                "Whether each example gets its own random values is ambiguous (torch refuses "
                "this too)",
                "Pass randomness='different' (independent per example) or 'same' (one draw "
                "for the batch) to vmap, or call the op outside vmap",
            )
    return [level for level in active if level.randomness == "different"]


def interpret(op: OperatorHandle, keyset: DispatchKeySet, *args: Any, **kwargs: Any) -> Any:
    """The ``Batched`` key's fallback: run ``op`` on a batch (see the module docstring)."""
    if _physical():  # vmap's own code: the arrays are physical ones
        return op.redispatch(keyset & _BELOW, *args, **kwargs)
    active = LEVELS.get()
    random = bool(active) and RANDOM_TAG in op.tags
    if not random and not _any_batched(args) and not _any_batched(kwargs.values()):
        return op.redispatch(keyset & _BELOW, *args, **kwargs)
    rule = op.extra(VMAP_RULE)
    plan = plan_of(op.schema, None if rule is None else rule.plan)
    values, keywords = plan.bind(args, kwargs)
    found, wrapped = _found_levels(plan, values)
    if found:
        _check_live(plan, found, active)
    if random:
        for level in _random_levels(op, active):
            found[id(level)] = level
    if not found:
        return op.redispatch(keyset & _BELOW, *args, **kwargs)
    if len(found) == 1:
        involved = list(found.values())
    else:
        involved = sorted(found.values(), key=lambda level: level.index)
    if rule is None and _decomposes(op):
        return op.redispatch(_DECOMPOSITION, *args, **kwargs)
    depth = min(level.depth for level in involved)
    recording = tape_depth()
    if not recording:
        if wrapped:
            values = _unwrapped(plan, values)
        with Physical():
            return run_batched(op, plan, values, keywords, involved, rule=rule, depth=depth)

    def compute(raw_args: tuple[Any, ...], raw_kwargs: dict[str, Any]) -> Any:
        raw_values, raw_keywords = plan.bind(raw_args, raw_kwargs)
        with Physical():
            return run_batched(op, plan, raw_values, raw_keywords, involved, rule=rule, depth=depth)

    formula = formula_of(op) if recording > depth else None
    return record_inner(formula, op, args, kwargs, compute=compute, depth=depth)


def _decomposes(op: OperatorHandle) -> bool:
    """Whether ``op`` (which has no rule) has a CompositeImplicitAutograd kernel to run."""
    if _CIA not in op.kernel_keys():
        return False
    return op.table_entry(DispatchKey.AutogradOther).reason == "math kernel"

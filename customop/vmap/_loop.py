"""The fallback for ops without a rule: one call per example, results stacked.

Correct for any op that computes each example independently, slow in
proportion to the batch, and said so once per op (`VmapFallbackWarning`,
naming ``register_vmap``). The slicing and stacking are `Moves` ops, so a
``grad`` of the vmapped function differentiates through them and a
``trace`` records them. It refuses what a loop cannot do exactly: writes
into batched arguments, one random draw shared by different examples
(``randomness="same"``), and outputs that are not arrays and differ per
example.
"""

from __future__ import annotations

import sys
import warnings
import weakref
from pathlib import Path
from typing import Any, Final

from customop.dispatch import OperatorHandle
from customop.exceptions import VmapFallbackWarning
from customop.vmap._arith import refuse
from customop.vmap._moves import Moves
from customop.vmap._plan import LIST_KINDS, Plan
from customop.vmap._rule import VmapInfo

__all__ = ["loop"]

_warned: weakref.WeakSet[OperatorHandle] = weakref.WeakSet()
_PACKAGE: Final = str(Path(__file__).parent.parent)
_GENERATED: Final = "<customop "  # generated call code (``<customop generated ns::op>``)


def _user_stacklevel() -> int:
    """The stacklevel of the nearest frame outside customop and its generated code."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None:
        name = frame.f_code.co_filename
        if not (name.startswith(_PACKAGE) or name.startswith(_GENERATED)):
            break
        frame, level = frame.f_back, level + 1
    return level


def _warn_once(op: OperatorHandle, size: int) -> None:
    if op in _warned:
        return
    _warned.add(op)
    short = op.name.name
    warnings.warn(
        VmapFallbackWarning(
            f"vmap: {op.name} has no vmap rule, so vmap calls it once per example ({size} "
            "calls here) and stacks the results. That is correct but slow. Register a rule "
            f"with {short}.register_vmap(fn) or customop.register_vmap({str(op.name)!r}, fn)."
        ),
        stacklevel=_user_stacklevel(),
    )


def _pick(value: Any, dim: Any, index: int, moves: Moves) -> Any:
    if dim is None:
        return value
    if isinstance(dim, list):
        return [_pick(item, d, index, moves) for item, d in zip(value, dim, strict=True)]
    return moves.select(value, dim, index)


def _refuse_first(plan: Plan, in_dims: list[Any], info: VmapInfo, random: bool) -> None:
    if plan.mutable:
        names = ", ".join(repr(n) for n in plan.schema.mutated_arguments)
        refuse(
            f"{plan.name} writes into {names} and has no vmap rule",
            "The loop fallback hands each example a slice, and a write into a slice does "
            "not reach the batched array on every backend",
            f"Register a rule that writes into the batched arrays: "
            f"customop.register_vmap({plan.name!r}, fn)",
        )
    if random and info.randomness == "same" and any(d is not None for d in in_dims):
        refuse(
            f"{plan.name} is a random op without a vmap rule, batched with randomness='same'",
            "A loop draws new random values per example, so the examples would not share them",
            f"Register a rule that draws once for the batch: customop.register_vmap("
            f"{plan.name!r}, fn), or use randomness='different'",
        )


def loop(
    op: OperatorHandle,
    plan: Plan,
    physical: list[Any],
    in_dims: list[Any],
    *,
    keywords: dict[str, Any],
    info: VmapInfo,
    moves: Moves,
) -> list[tuple[Any, Any]]:
    """Run ``op`` once per example; one (stacked value, out_dim) per return."""
    _refuse_first(plan, in_dims, info, "nondeterministic_seeded" in op.tags)
    _warn_once(op, info.batch_size)
    rows = []
    for index in range(info.batch_size):
        row = op(*[_pick(v, d, index, moves) for v, d in zip(physical, in_dims, strict=True)],
                 **keywords)  # fmt: skip
        count = len(plan.returns)
        rows.append(() if count == 0 else (row,) if count == 1 else tuple(row))
    return [_stack(plan, i, [row[i] for row in rows], moves) for i in range(len(plan.returns))]


def _stack(plan: Plan, position: int, items: list[Any], moves: Moves) -> tuple[Any, Any]:
    kind = plan.returns[position]
    nones = sum(item is None for item in items)
    if kind is None or nones == len(items):
        first = items[0]
        if kind is None and any(item != first for item in items[1:]):
            refuse(
                f"{plan.name} returned different {type(first).__name__} values for different "
                f"examples as output {position}",
                "Only arrays can be stacked into a batch",
                f"Register a rule for {plan.name} that returns an array there",
            )
        return first, None
    if nones:
        refuse(
            f"{plan.name} returned None for some examples and a tensor for others as output "
            f"{position}",
            "Only arrays can be stacked into a batch",
            f"Register a rule for {plan.name}",
        )
    if kind not in LIST_KINDS:
        return moves.stack(items, 0), 0
    lengths = {len(item) for item in items}
    if len(lengths) != 1:
        refuse(
            f"{plan.name} returned lists of {sorted(lengths)} tensors for different examples "
            f"as output {position}",
            "Stacking pairs the i-th tensor of every example",
            f"Register a rule for {plan.name}",
        )
    count = lengths.pop()
    stacked = [moves.stack([item[i] for item in items], 0) for i in range(count)]
    return stacked, [0] * count

"""Rules for the autograd builtins (``autograd::add``, ``ones_like``, ``zeros_like``).

A ``grad`` inside a ``vmap`` seeds, accumulates and fills gradients of
batched values with these ops; their rules keep that exact and loop-free.
"""

from __future__ import annotations

from typing import Any

from customop.dispatch import OperatorHandle
from customop.vmap._moves import Moves
from customop.vmap._rule import RuleFn, VmapInfo

__all__ = ["add_rule", "like_rule"]


def like_rule(op: OperatorHandle) -> RuleFn:
    """``ones_like`` / ``zeros_like``: the same op on the batch, batched where the input is."""

    def rule(info: VmapInfo, in_dims: tuple[Any, ...], x: Any) -> Any:
        return op(x), in_dims[0]

    rule.__name__ = rule.__qualname__ = f"{op.name.name}_rule"
    return rule


def add_rule(op: OperatorHandle, moves: Moves) -> RuleFn:
    """``add(a, b)`` (same shapes): both batched at 0 (broadcast if one is not), then add."""

    def front(value: Any, dim: int | None, size: int) -> Any:
        if dim is None:
            return moves.expand(value, 0, size)
        return value if dim == 0 else moves.movedim(value, dim, 0)

    def add_batched(info: VmapInfo, in_dims: tuple[Any, ...], a: Any, b: Any) -> Any:
        size = info.batch_size
        return op(front(a, in_dims[0], size), front(b, in_dims[1], size)), 0

    return add_batched

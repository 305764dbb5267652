"""vmap in a dispatcher: the batched array type, the interpreter fallback, vmap's own ops.

Done once per dispatcher, on its first ``vmap`` (as ``trace`` installs its
``Tracer`` fallback): `BatchedArray` becomes an array type carrying only the
``Batched`` key, the interpreter (`customop.vmap._interpreter.interpret`) is
the key's fallback, the `Moves` ops are defined, and the autograd builtins
(which a ``grad`` inside a ``vmap`` calls on batched values) get rules.
"""

from __future__ import annotations

from typing import Any, Final

from customop.autograd import install as install_autograd
from customop.dispatch import Dispatcher, DispatchKey, DispatchKeySet, RegistryLock
from customop.vmap._builtin_rules import add_rule, like_rule
from customop.vmap._interpreter import interpret
from customop.vmap._moves import MOVES, Moves
from customop.vmap._rule import VMAP_RULE, VmapRule
from customop.vmap._value import BatchedArray

__all__ = ["install"]

_SOURCE: Final = "<customop vmap>"
_lock = RegistryLock()


def install(dispatcher: Dispatcher) -> Moves:
    """Make ``dispatcher`` ready for ``vmap`` (once); its `Moves`."""
    found = MOVES.get(dispatcher)
    if found is not None:
        return found
    with _lock:
        found = MOVES.get(dispatcher)
        if found is not None:
            return found
        keys = DispatchKeySet(DispatchKey.Batched)
        dispatcher.register_array_type(BatchedArray, keys)
        dispatcher.register_fallback(DispatchKey.Batched, interpret, source=_SOURCE)
        moves = Moves(dispatcher)
        _rules_for_autograd(dispatcher, moves)
        MOVES[dispatcher] = moves
    return moves


def _rules_for_autograd(dispatcher: Dispatcher, moves: Moves) -> None:
    """Rules for the ops a backward pass calls itself, so ``vmap(grad(f))`` batches them."""
    builtins = install_autograd(dispatcher)
    rules: list[tuple[Any, Any]] = [
        (builtins.add, add_rule(builtins.add, moves)),
        (builtins.ones_like, like_rule(builtins.ones_like)),
        (builtins.zeros_like, like_rule(builtins.zeros_like)),
    ]
    for op, fn in rules:
        if op.extra(VMAP_RULE) is None:
            rule = VmapRule(fn, op.schema, _SOURCE)
            dispatcher.register_extra(op, VMAP_RULE, rule, source=_SOURCE)

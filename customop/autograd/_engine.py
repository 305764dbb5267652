"""The Autograd keys at work: the formula kernel's recorder, the no-formula fallback, install.

NOTE: how the Autograd keys get activated. A transform enters
``include_keys(DispatchKey.Autograd)`` around the forward it records, and
nothing else does: calls outside a transform compute no Autograd bit, so
they stay on the generated fast path whatever kernels the Autograd keys
hold, and no array type changes (numpy, cupy, torch and user arrays, fakes
and the tracer's fakes all work as they are). Inside, every call reaches
the Autograd key: an op with a formula runs `AutogradFormula` (which calls
`record` here through the engine hook), an op without one runs the
dispatcher's Autograd fallback, which `install` makes `record_untracked`
in place of the default fallthrough, so a gradient through such an op is
caught before any backward runs. The alternative, a JAX-style wrapper type
carrying the Autograd key, would have to forward every array method and
unwrap at every kernel, and would hand fakes the tracer does not know.

Both kernels compute below the Autograd keys with no tape active (kernels
that call ops are not recorded twice, as torch's AutoDispatchBelowAutograd),
then record the call on every active tape that tracks one of its inputs:
nested transforms share one forward.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Final

from customop.autograd._tape import ACTIVE, bind_inputs, tensor_positions
from customop.dispatch import Dispatcher, DispatchKey, DispatchKeySet, OperatorHandle
from customop.dispatch._kernel import DEFAULT_SOURCE
from customop.dispatch._keys import keyset_from_bits
from customop.library._autograd import AutogradFormula, set_engine

__all__ = ["Builtins", "install", "record", "record_untracked"]

_NOT_AUTOGRAD_BITS: Final = (~DispatchKey.Autograd.expansion).bits
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
    below = keyset_from_bits(keyset.bits & _NOT_AUTOGRAD_BITS)
    if not tapes:
        return op.redispatch(below, *args, **kwargs)
    token = _set_active(())
    try:
        result = op.redispatch(below, *args, **kwargs)
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
    finally:
        _reset_active(token)
    return result


class _Engine:
    """The engine `AutogradFormula` kernels call (see `customop.library._autograd`)."""

    def run(
        self,
        formula: AutogradFormula,
        op: OperatorHandle,
        keyset: DispatchKeySet,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        return record(formula, op, keyset, args, kwargs)


set_engine(_Engine())


def record_untracked(op: OperatorHandle, keyset: DispatchKeySet, *args: Any, **kwargs: Any) -> Any:
    """The Autograd fallback: ops without a formula are recorded as nodes backward refuses."""
    return record(None, op, keyset, args, kwargs)


class Builtins:
    """The ops backward itself calls on one dispatcher (so traces record them too)."""

    __slots__ = ("add", "dispatcher", "ones_like", "zeros_like")

    def __init__(self, dispatcher: Dispatcher) -> None:
        from customop.autograd._builtins import define_builtins  # noqa: PLC0415 - cycle

        self.dispatcher = dispatcher
        self.add, self.ones_like, self.zeros_like = define_builtins(dispatcher)


_installed: weakref.WeakKeyDictionary[Dispatcher, Builtins] = weakref.WeakKeyDictionary()
_install_lock = threading.Lock()


def install(dispatcher: Dispatcher) -> Builtins:
    """Make ``dispatcher`` ready for transforms (once): the Autograd fallback and builtins.

    The default Autograd fallthrough is replaced by `record_untracked`; a
    fallback the user registered on the Autograd keys is left alone.
    """
    found = _installed.get(dispatcher)
    if found is not None:
        return found
    with _install_lock:
        found = _installed.get(dispatcher)
        if found is not None:
            return found
        current = dispatcher._fallbacks.get(DispatchKey.AutogradOther)
        if current is None or current.source == DEFAULT_SOURCE:
            for handle in dispatcher.default_registrations:
                if handle.description == "fallback Autograd":
                    handle.remove()
            dispatcher.register_fallback(
                DispatchKey.Autograd, record_untracked, debug="customop.autograd"
            )
        found = _installed[dispatcher] = Builtins(dispatcher)
    return found

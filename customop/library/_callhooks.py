"""New-overload hooks: an adapter hears of every `OpOverload` made for a dispatcher.

``customop.torch`` gives the call objects of the ops it mirrors in torch a
torch-aware ``__call__``; objects that exist when it registers an op it finds
itself, and this hook tells it of those made later (a ``@custom_op``'s first
call binds its overload then). One hook per dispatcher; a hook changes the
object in place (its class), never replaces it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from customop.dispatch import Dispatcher, RegistrationHandle
from customop.dispatch._guard import RegistryLock
from customop.dispatch._kernel import caller_source
from customop.exceptions import RegistrationError

__all__ = ["OverloadHook", "adopt_overload", "set_overload_hook"]

#: Called with each new `OpOverload` of the hooked dispatcher.
OverloadHook = Callable[[Any], None]
T = TypeVar("T")

_lock = RegistryLock()
_hooks: WeakKeyDictionary[Dispatcher, OverloadHook] = WeakKeyDictionary()


def set_overload_hook(dispatcher: Dispatcher, hook: OverloadHook) -> RegistrationHandle:
    """Make ``hook`` hear of every new overload of ``dispatcher``; the handle stops it."""
    with _lock:
        if dispatcher in _hooks:
            raise RegistrationError(
                f"set_overload_hook: {dispatcher!r} has an overload hook already. One adapter "
                "owns the call objects of a dispatcher. Remove the other hook first."
            )
        _hooks[dispatcher] = hook

    def undo() -> None:
        with _lock:
            if _hooks.get(dispatcher) is hook:
                del _hooks[dispatcher]

    return RegistrationHandle(undo, description="overload hook", source=caller_source())


def adopt_overload(dispatcher: Dispatcher, overload: T) -> T:
    """``overload``, after the dispatcher's hook (if any) has seen it."""
    hook = _hooks.get(dispatcher)
    if hook is not None:
        hook(overload)
    return overload

"""Call-object hooks: an adapter hears of every `OpOverload` made for a dispatcher.

``customop.torch`` gives the call objects of the ops it serves a torch-aware
``__call__``; objects that exist when it starts serving an op it finds
through ``customop.adapter.call_objects``, and these hooks tell it of those
made later (a ``@custom_op``'s first call binds its overload then). A hook
changes the object in place (its class), never replaces it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from customop.dispatch import Dispatcher, RegistrationHandle, RegistryLock, caller_source

__all__ = ["CallHook", "adopt_overload", "on_call_object"]

#: Called with each new `OpOverload` of the hooked dispatcher.
CallHook = Callable[[Any], None]
T = TypeVar("T")

_lock = RegistryLock()
# Per dispatcher (not per op): the adapters listening to its new call objects.
_hooks: WeakKeyDictionary[Dispatcher, tuple[CallHook, ...]] = WeakKeyDictionary()


def on_call_object(dispatcher: Dispatcher, hook: CallHook) -> RegistrationHandle:
    """Make ``hook`` hear of every new call object of ``dispatcher``'s ops.

    Args:
        dispatcher: whose ops' call objects to hear of.
        hook: called with each new `OpOverload`.

    Returns:
        The handle that stops it.
    """
    with _lock:
        _hooks[dispatcher] = (*_hooks.get(dispatcher, ()), hook)

    def undo() -> None:
        with _lock:
            _hooks[dispatcher] = tuple(h for h in _hooks.get(dispatcher, ()) if h is not hook)

    return RegistrationHandle(undo, description="call-object hook", source=caller_source())


def adopt_overload(dispatcher: Dispatcher, overload: T) -> T:
    """``overload``, after the dispatcher's hooks (if any) have seen it."""
    for hook in _hooks.get(dispatcher, ()):
        hook(overload)
    return overload

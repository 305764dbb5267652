"""The handles of registrations that returned their function (see ``customop.handle_of``).

Keyed weakly by the function (a dropped function does not stay alive for its
entry). It lives here, beside `RegistrationHandle`, so that the registration
functions of every layer (``register_fake`` in the library, ``register_vmap``
in customop.vmap) record into the one table ``handle_of`` reads.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from customop.dispatch._guard import RegistryLock
from customop.dispatch._handles import RegistrationHandle

__all__ = ["remember_handle", "remembered_handle"]

F = TypeVar("F", bound=Callable[..., Any])

_handles: weakref.WeakKeyDictionary[Any, RegistrationHandle] = weakref.WeakKeyDictionary()
# Functions that cannot be weakly referenced (some builtins): kept by id, with the
# function itself, so an id is never reused while its entry exists.
_strong: dict[int, tuple[Any, RegistrationHandle]] = {}
_lock = RegistryLock()


def remember_handle(fn: F, handle: RegistrationHandle) -> F:
    """Record ``handle`` as ``fn``'s latest registration; returns ``fn``."""
    with _lock:
        try:
            _handles[fn] = handle
        except TypeError:
            _strong[id(fn)] = (fn, handle)
    return fn


def remembered_handle(fn: Callable[..., Any]) -> RegistrationHandle | None:
    """The handle of ``fn``'s latest registration, or None."""
    with _lock:
        try:
            found = _handles.get(fn)
        except TypeError:
            found = None
        if found is None and id(fn) in _strong:
            found = _strong[id(fn)][1]
    return found

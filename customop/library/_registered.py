"""`handle_of`: the handle of a registration whose function was returned to the caller.

torch's ``register_fake`` / ``register_kernel`` / ``impl`` return the function
they register, decorator or not, so ``@register_fake(...) def f`` keeps ``f``
callable and testable. customop's do the same, and keep the registration's
`RegistrationHandle` here, keyed weakly by the function (a dropped function
does not stay alive for its entry). One rule finds it: ``handle_of(fn)`` is
the handle of ``fn``'s most recent registration.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from customop.dispatch import RegistrationHandle, RegistryLock
from customop.exceptions import RegistrationError

__all__ = ["handle_of", "remember_handle"]

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


def handle_of(fn: Callable[..., Any]) -> RegistrationHandle:
    """The `RegistrationHandle` of ``fn``'s most recent registration.

    ``register_fake``, ``register_kernel`` and ``impl`` (the free functions and
    the `CustomOpDef` methods, as decorators or calls) return the function they
    registered, as torch's do; this is how to reach the registration itself,
    e.g. to remove it: ``customop.handle_of(f).remove()``.

    Args:
        fn: A function passed to one of those registration functions.

    Returns:
        The handle of the latest registration of ``fn``.

    Raises:
        RegistrationError: ``fn`` was never registered by one of them.
    """
    with _lock:
        try:
            found = _handles.get(fn)
        except TypeError:
            found = None
        if found is None and id(fn) in _strong:
            found = _strong[id(fn)][1]
    if found is None:
        name = getattr(fn, "__qualname__", None) or repr(fn)
        raise RegistrationError(
            f"handle_of: {name[:200]!r} has no registration. Only functions passed to "
            "register_fake, register_kernel or impl have one (Library methods and "
            "Dispatcher methods return their handle directly). Register the function first."
        )
    return found

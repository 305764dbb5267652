"""`handle_of`: the handle of a registration whose function was returned to the caller.

torch's ``register_fake`` / ``register_kernel`` / ``impl`` / ``register_vmap``
return the function they register, decorator or not, so ``@register_fake(...)
def f`` keeps ``f`` callable and testable. customop's do the same, and keep the
registration's `RegistrationHandle` (`customop.dispatch`'s weak table, so that
registration functions of every layer can record theirs). One rule finds it:
``handle_of(fn)`` is the handle of ``fn``'s most recent registration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from customop.dispatch import RegistrationHandle, remember_handle, remembered_handle
from customop.exceptions import RegistrationError

__all__ = ["handle_of", "remember_handle"]


def handle_of(fn: Callable[..., Any]) -> RegistrationHandle:
    """The `RegistrationHandle` of ``fn``'s most recent registration.

    ``register_fake``, ``register_kernel``, ``impl`` and ``register_vmap`` (the
    free functions and the `CustomOpDef` methods, as decorators or calls)
    return the function they registered, as torch's do; this is how to reach
    the registration itself, e.g. to remove it: ``customop.handle_of(f).remove()``.

    Args:
        fn: A function passed to one of those registration functions.

    Returns:
        The handle of the latest registration of ``fn``.

    Raises:
        RegistrationError: ``fn`` was never registered by one of them.
    """
    found = remembered_handle(fn)
    if found is None:
        name = getattr(fn, "__qualname__", None) or repr(fn)
        raise RegistrationError(
            f"handle_of: {name[:200]!r} has no registration. Only functions passed to "
            "register_fake, register_kernel or impl have one, and rules passed to register_vmap "
            "(Library methods and Dispatcher methods return their handle directly). Register "
            "the function first."
        )
    return found

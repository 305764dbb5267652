"""The one class-swap helper: give one call object a ``__call__`` of its own.

Python looks ``__call__`` up on the type, never the instance, so an object
that calls through generated code gets a small subclass of its own whose
``__call__`` is that code (an `OpOverload` or `CustomOpDef` on its first call,
and an adapter's call code while the adapter serves the op). Every swap in
customop goes through `swap_class`, under one lock, so two threads never
swap one object at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from customop.dispatch import RegistryLock

__all__ = ["restore_class", "swap_class"]

_lock = RegistryLock()


def swap_class(
    obj: Any,
    function: Callable[..., Any],
    *,
    name: str,
    base: type | None = None,
    method: bool = False,
    attrs: dict[str, Any] | None = None,
    only_from: type | None = None,
) -> type | None:
    """Move ``obj`` to a new subclass whose ``__call__`` is ``function``.

    Args:
        obj: the call object.
        function: the call code; a ``staticmethod`` unless ``method``.
        name: the new class's name.
        base: the class to derive from (default: ``obj``'s class).
        method: install ``function`` as a plain method (it takes the object first).
        attrs: more class attributes.
        only_from: swap only while ``obj`` is exactly of this class (a first call).

    Returns:
        The class ``obj`` had (to restore with `restore_class`), or None if
        ``only_from`` did not match and nothing changed.
    """
    with _lock:
        cls = type(obj)
        if only_from is not None and cls is not only_from:
            return None
        parent = cls if base is None else base
        namespace: dict[str, Any] = {"__call__": function if method else staticmethod(function)}
        namespace.update(attrs or {})
        if "__slots__" in vars(parent):
            namespace["__slots__"] = ()
        obj.__class__ = type(name, (parent,), namespace)
    return cls


def restore_class(obj: Any, cls: type, *, unless: Callable[[type], bool] | None = None) -> None:
    """Give ``obj`` back its class ``cls`` (skipped when ``unless(type(obj))`` holds)."""
    with _lock:
        if unless is None or not unless(type(obj)):
            obj.__class__ = cls

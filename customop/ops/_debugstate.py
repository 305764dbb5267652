"""Whether calls run under ``debug_checks()``, and the checker its block put in place.

The call path reads `debug_state` (cheap: an int and a ContextVar); the
checks themselves live beside ``opcheck`` (``customop.fake``), whose
``debug_checks()`` block enters here with its checker, so this layer never
imports the one above it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Final, TypeAlias

from customop.dispatch import RegistryLock, epoch
from customop.schema import FunctionSchema

__all__ = ["Checker", "debug_state"]

#: ``checker(schema, kernel, args, kwargs)``: run the kernel, raise if it broke the schema.
Checker: TypeAlias = Callable[
    [FunctionSchema, Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any
]

_checker: Final[ContextVar[Checker | None]] = ContextVar("customop.debug_checks", default=None)


class _DebugState:
    """Read by every slow-path call: ``active`` is cheap, ``run`` does the work."""

    __slots__ = ("_lock", "blocks")

    def __init__(self) -> None:
        self.blocks = 0
        self._lock = RegistryLock()

    @property
    def active(self) -> bool:
        return self.blocks > 0 and _checker.get() is not None

    def run(
        self,
        schema: FunctionSchema,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        checker = _checker.get()
        return fn(*args, **kwargs) if checker is None else checker(schema, fn, args, kwargs)

    def enter(self, checker: Checker) -> object:
        """Check calls in this context with ``checker``; every thread leaves the fast path."""
        token = _checker.set(checker)
        with self._lock:
            self.blocks += 1
        epoch._local_block(+1)
        return token

    def exit(self, token: object) -> None:
        epoch._local_block(-1)
        with self._lock:
            self.blocks -= 1
        _checker.reset(token)  # type: ignore[arg-type]  # the token `enter` returned


debug_state: Final = _DebugState()

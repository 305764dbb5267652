"""Registry locks that know when their thread is inside one, and deferred finalizers.

A `Library` closes itself when garbage-collected, and a collection can start
at any allocation: also one made while this thread holds a registry lock
(filling a call cache, rebuilding a table, adding a blockwise rule). Closing
right there would take the same locks again: a plain lock deadlocks, a
re-entrant one lets a half-done write be changed under it. So every
registry lock is a `RegistryLock`, which counts how deep its thread is in
such sections, and `run_or_defer` runs a finalizer at once only outside
every section; inside one, the finalizer runs when the thread leaves the
outermost section, holding no registry lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Final, final

__all__ = ["RegistryLock", "in_registry_section", "run_or_defer"]


@final
class _Depth(threading.local):
    def __init__(self) -> None:
        self.depth = 0
        self.pending: list[Callable[[], None]] = []


_state: Final = _Depth()


@final
class RegistryLock:
    """A lock (re-entrant or not) whose sections defer finalizers to their end.

    Use it as ``with lock:``; it also offers ``acquire`` / ``release``.
    """

    __slots__ = ("_lock",)

    def __init__(self, *, reentrant: bool = False) -> None:
        self._lock: threading.Lock | threading.RLock = (
            threading.RLock() if reentrant else threading.Lock()
        )

    def acquire(self) -> bool:
        """Take the lock (blocking) and enter a registry section.

        Returns:
            True, once the lock is held.
        """
        self._lock.acquire()
        _state.depth += 1
        return True

    def release(self) -> None:
        """Leave the section and release the lock; at the outermost, run deferred finalizers."""
        state = _state
        state.depth -= 1
        self._lock.release()
        if state.depth == 0 and state.pending:
            _run_pending(state)

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def in_registry_section() -> bool:
    """Whether this thread holds a registry lock now.

    Returns:
        True inside a ``with registry_lock:`` section.
    """
    return _state.depth > 0


def run_or_defer(finalizer: Callable[[], None]) -> None:
    """Run ``finalizer`` now, or, inside a registry section, when the thread leaves it.

    Args:
        finalizer: what to run (e.g. closing a garbage-collected `Library`).
    """
    state = _state
    if state.depth > 0:
        state.pending.append(finalizer)
    else:
        finalizer()


def _run_pending(state: _Depth) -> None:
    pending, state.pending = state.pending, []
    for finalizer in pending:
        finalizer()

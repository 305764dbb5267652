"""Calls into torch against changes of the op's torch registration (issue #27 §3).

torch 2.13 crashes the process (SIGSEGV) when a ``torch.library`` registration
is destroyed while another thread is inside a call of that op, most readily
with inputs that need grad (the call runs Python autograd code of the op).
A `Gate` per mirrored op keeps customop's own objects out of that: every call
they hand to torch is a *reader*, and removing the op from torch or
rebuilding its kernel library (a registration change) is a *writer*, which
waits until the calls in flight have left and holds new ones until it is
done. Calls that never reach torch (the eager fast path) do not pass the
gate. A thread already inside a call of the op (a kernel calling its own op
again) enters again without waiting, so a writer that waits for it cannot
deadlock against it.

Direct ``torch.ops.ns.name`` callers do not pass through customop and keep
torch's behaviour (docs/torch.md).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import final

__all__ = ["Gate"]


@final
class Gate:
    """A readers-writer gate, writers first, re-entrant for a thread's own reads."""

    __slots__ = ("_cond", "_depth", "_readers", "_writing")

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writing = False
        self._depth = threading.local()

    def enter(self) -> None:
        """A call into torch starts (waits while a writer is at work)."""
        depth = getattr(self._depth, "n", 0)
        with self._cond:
            while self._writing and depth == 0:
                self._cond.wait()
            self._readers += 1
        self._depth.n = depth + 1

    def leave(self) -> None:
        """A call into torch ended."""
        self._depth.n -= 1
        with self._cond:
            self._readers -= 1
            if self._readers == 0:
                self._cond.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Change the op's torch registration once no other thread is inside a call."""
        own = getattr(self._depth, "n", 0)  # this thread's own calls in flight
        with self._cond:
            while self._writing:
                self._cond.wait()
            self._writing = True
            while self._readers > own:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()

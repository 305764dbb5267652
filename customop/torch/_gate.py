"""Calls into torch against removals of the op's torch registrations (issue #27 §3).

torch 2.13 crashes the process (SIGSEGV) when a ``torch.library`` registration
is destroyed while another thread is inside a call of that op, most readily
with inputs that need grad (the call runs Python autograd code of the op).
A `Gate` per mirrored op keeps customop's own objects out of that: every call
they hand to torch is counted while it is inside torch, and destroying a
library of the op is `defer`-red until the count is back to zero (the last
call out runs it). Nothing waits, so a removal made under customop's
registration lock cannot deadlock against a call that needs that lock
inside its kernel. Calls that never reach torch (the eager fast path) are
not counted; calls that start after a removal see the op gone from torch
and take customop's own path.

Direct ``torch.ops.ns.name`` callers do not pass through customop and keep
torch's behaviour (docs/torch.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import final

__all__ = ["Gate"]


@final
class Gate:
    """A count of calls inside torch, and the actions that wait for it to be zero."""

    __slots__ = ("_cond", "_depth", "_draining", "_pending", "_readers")

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._draining = False
        self._pending: list[Callable[[], None]] = []
        self._depth = threading.local()  # this thread's own calls inside

    def enter(self) -> None:
        """A call into torch starts (before it reads which torch op to call)."""
        depth = getattr(self._depth, "n", 0)
        with self._cond:
            while self._draining and depth == 0:  # a removal is waiting: after it
                self._cond.wait()
            self._readers += 1
        self._depth.n = depth + 1

    def leave(self) -> None:
        """A call into torch ended; the last one out runs the deferred actions."""
        self._depth.n -= 1
        with self._cond:
            self._readers -= 1
            if self._readers:
                return
            self._cond.notify_all()
            run, self._pending = self._pending, []
            if not run:
                return
            held = not self._draining
            self._draining = True  # new calls wait while the old kernels go
        try:
            for action in run:
                action()
        finally:
            if held:
                self.release()

    def drain_then(self, action: Callable[[], None]) -> None:
        """Hold new calls off, wait for those inside (but this thread's own), run ``action``.

        Never under customop's registration lock: a call inside may need it.
        """
        own = getattr(self._depth, "n", 0)
        with self._cond:
            while self._draining:
                self._cond.wait()
            self._draining = True
            while self._readers > own:
                self._cond.wait()
        try:
            action()
        finally:
            with self._cond:
                self._draining = False
                self._cond.notify_all()

    def hold_if_idle(self) -> bool:
        """If no call is inside torch (and no removal is waiting), hold new calls off
        until `release` (for a rebuild of the op's kernels); False when busy."""
        with self._cond:
            if self._readers or self._draining:
                return False
            self._draining = True
            return True

    def release(self) -> None:
        """Let calls in again after `hold_if_idle`."""
        with self._cond:
            self._draining = False
            self._cond.notify_all()

    def defer(self, action: Callable[[], None]) -> None:
        """Run ``action`` now if no call is inside torch, else when the last one leaves."""
        with self._cond:
            if self._readers:
                self._pending.append(action)
                return
        action()

    @property
    def busy(self) -> bool:
        """Whether an action is waiting for calls to leave."""
        return bool(self._pending)

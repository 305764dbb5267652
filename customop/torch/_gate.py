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
from threading import get_ident
from typing import final

__all__ = ["Gate"]


@final
class Gate:
    """Calls inside torch (by thread), removals that wait for them, actions deferred.

    NOTE: the calls' side takes no lock: ``list.append`` and ``list.remove`` of
    the thread's id are single C calls under the GIL, about 100 ns per call
    together; removals, which are rare, take the condition. A call appends
    itself, then reads ``draining``; so every removal holds calls off first
    and then looks for calls inside: each call is either seen inside, or sees
    ``draining`` and waits. Holds are counted: two removals may run at once
    (a deferred one and a waiting one), and calls wait until both are done.
    """

    __slots__ = ("_cond", "_holds", "draining", "inside", "pending")

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self.inside: list[int] = []  # one thread id per call inside torch
        self.draining = False  # _holds > 0: what calls read
        self._holds = 0
        self.pending: list[Callable[[], None]] = []

    def enter(self) -> None:
        """A call into torch starts (before it reads which torch op to call)."""
        me = get_ident()
        self.inside.append(me)
        if self.draining:
            self.wait_to_enter(me)

    def wait_to_enter(self, me: int) -> None:
        """``enter`` while a removal is waiting: wait for it to end, unless this thread
        is already inside (a kernel calling its own op), which it waits for anyway."""
        inside = self.inside
        while self.draining and inside.count(me) == 1:
            inside.remove(me)
            with self._cond:
                self._cond.notify_all()
                while self.draining:
                    self._cond.wait()
            inside.append(me)

    def leave(self) -> None:
        """A call into torch ended; the last one out runs the deferred actions."""
        self.inside.remove(get_ident())
        if self.draining or self.pending:
            self.after_leave()

    def after_leave(self) -> None:
        """What a leaving call does while a removal waits, or actions are deferred."""
        with self._cond:
            self._cond.notify_all()
            if not self.pending:
                return
            # Hold first, then look (see the class's note): checked the other way
            # round, a call could enter between the look and the hold.
            self._hold()
            if self.inside:
                self._unhold()
                return
            run, self.pending = self.pending, []
        try:
            for action in run:
                action()
        finally:
            self.release()

    def _others(self) -> int:
        inside = self.inside
        return len(inside) - inside.count(get_ident())

    def drain_then(self, action: Callable[[], None]) -> None:
        """Hold new calls off, wait for those inside (but this thread's own), run ``action``.

        Never under customop's registration lock: a call inside may need it.
        """
        with self._cond:
            while self.draining:
                self._cond.wait()
            self._hold()
            while self._others():
                self._cond.wait(0.01)  # woken by leave(); the timeout is a safety net
        try:
            action()
        finally:
            self.release()

    def hold_if_idle(self) -> bool:
        """If no call is inside torch (and no removal is waiting), hold new calls off
        until `release` (for a rebuild of the op's kernels); False when busy."""
        with self._cond:
            if self.draining:
                return False
            self._hold()
            if self._others():
                self._unhold()
                return False
            return True

    def release(self) -> None:
        """End a hold (`hold_if_idle`'s; calls come in once no other removal holds them)."""
        with self._cond:
            self._unhold()

    def _hold(self) -> None:  # under the condition
        self._holds += 1
        self.draining = True

    def _unhold(self) -> None:  # under the condition
        self._holds -= 1
        self.draining = self._holds > 0
        self._cond.notify_all()

    def defer(self, action: Callable[[], None]) -> None:
        """Run ``action`` now if no call is inside torch, else when the last one leaves
        (either way while new calls are held off)."""
        with self._cond:
            self.pending.append(action)
        self.after_leave()

"""The Gate: deferred removals never run while a call is inside torch (issue #27 §3).

The calls' side takes no lock (append, then read ``draining``), so the
removal side must hold calls off before it looks for calls inside.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator

import pytest

from customop.torch._gate import Gate


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads every microsecond, so interleavings come often."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def test_defer_runs_at_once_when_idle_and_holds_calls_off_meanwhile() -> None:
    gate = Gate()
    seen: list[bool] = []
    gate.defer(lambda: seen.append(gate.draining))
    assert seen == [True]
    assert not gate.draining and not gate.pending


def test_defer_waits_for_the_last_call_inside() -> None:
    gate = Gate()
    ran: list[int] = []
    gate.enter()
    gate.enter()  # a kernel calling its own op: the same thread, twice
    gate.defer(lambda: ran.append(1))
    assert ran == [] and gate.pending
    assert not gate.draining  # a deferral does not keep calls out while calls run
    gate.leave()
    assert ran == []
    gate.leave()
    assert ran == [1]
    assert not gate.draining and not gate.pending


@pytest.mark.parametrize("drains", [False, True], ids=["defer", "defer-and-drain"])
def test_no_deferred_action_runs_while_a_call_is_inside(fast_switching: None, drains: bool) -> None:
    """Four threads enter and leave; the main thread defers (and drains) actions that
    record any call inside torch. Checked before holding calls off, about 50 such
    overlaps came per second here."""
    gate = Gate()
    inside: set[int] = set()
    overlaps: list[int] = []
    stop = threading.Event()

    def caller() -> None:
        me = threading.get_ident()
        while not stop.is_set():
            gate.enter()
            inside.add(me)
            inside.discard(me)
            gate.leave()

    def action() -> None:
        if inside:
            overlaps.append(len(inside))

    threads = [threading.Thread(target=caller) for _ in range(4)]
    for thread in threads:
        thread.start()
    deferred, end = 0, time.monotonic() + 1.5
    try:
        while time.monotonic() < end:
            gate.defer(action)
            deferred += 1
            if drains and deferred % 50 == 0:
                gate.drain_then(action)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    gate.defer(lambda: None)  # the last pending actions, with every call gone
    assert deferred > 1000
    assert not gate.pending
    assert overlaps == []

"""Registry locks defer finalizers that a garbage collection starts inside them."""

from __future__ import annotations

import gc
import threading

import pytest

from customop import Dispatcher, Library
from customop.dispatch import epoch
from customop.dispatch._guard import RegistryLock, in_registry_section, run_or_defer


@pytest.mark.parametrize("reentrant", [False, True], ids=["lock", "rlock"])
def test_a_finalizer_inside_a_section_runs_when_the_outermost_one_ends(reentrant: bool) -> None:
    lock, ran = RegistryLock(reentrant=reentrant), []
    outer = RegistryLock()
    with outer:
        with lock:
            assert in_registry_section()
            run_or_defer(lambda: ran.append("inner"))
            assert ran == []
        assert ran == []  # still inside `outer`
    assert ran == ["inner"]
    assert not in_registry_section()


def test_a_finalizer_outside_every_section_runs_at_once() -> None:
    ran: list[int] = []
    run_or_defer(lambda: ran.append(1))
    assert ran == [1]


def _unreachable_library(dispatcher: Dispatcher) -> None:
    lib = Library("guarded", "DEF", dispatcher=dispatcher)
    lib.define("f(Tensor x) -> Tensor")
    lib.cycle = lib  # type: ignore[attr-defined]  # only a collection frees it


@pytest.mark.parametrize(
    "section",
    [lambda d: epoch._lock, lambda d: d._lock],
    ids=["epoch-lock", "dispatcher-lock"],
)
def test_a_library_collected_inside_a_registry_section_closes_after_it(section: object) -> None:
    """Before: gc inside the epoch's lock re-entered it from Library.__del__ and hung."""
    dispatcher = Dispatcher()
    _unreachable_library(dispatcher)
    seen: list[bool] = []

    def collect_inside() -> None:
        with section(dispatcher):  # type: ignore[operator]
            gc.collect()
            seen.append(dispatcher.find_op("guarded::f") is not None)
        seen.append(dispatcher.find_op("guarded::f") is not None)

    worker = threading.Thread(target=collect_inside, daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "garbage collection inside a registry lock deadlocked"
    assert seen == [True, False]  # kept during the section, closed right after it

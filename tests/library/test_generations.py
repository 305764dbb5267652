"""One generation per call: while an op is redefined, every call runs exactly one
generation's kernels, bound against that generation's schema (issue #27).

Generations alternate between two schemas (one argument, then two), and each
body returns its generation's number, so a call that ran a foreign body, or a
body with another generation's arguments, is seen. An old `@custom_op` object
either runs its own generation or raises a RegistrationError that says it was
replaced, removed or redefined.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import customop
from customop.dispatch import Dispatcher
from customop.exceptions import RegistrationError, UnknownOperatorError
from customop.library import Ops


def _define(dispatcher: Dispatcher, generation: int) -> customop.CustomOpDef[Any, Any]:
    if generation % 2:

        def two(x: np.ndarray, k: int = 0) -> np.ndarray:
            return np.full(1, float(generation))

        return customop.custom_op("gen::f", two, mutates_args=(), dispatcher=dispatcher)

    def one(x: np.ndarray) -> np.ndarray:
        return np.full(1, float(generation))

    return customop.custom_op("gen::f", one, mutates_args=(), dispatcher=dispatcher)


@pytest.fixture
def switch_interval(request: pytest.FixtureRequest) -> Iterator[float]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(request.param)
    yield request.param
    sys.setswitchinterval(before)


#: A call through a spelling that is looked up anew may see any current generation
#: (or none, briefly, which it reports as undefined), never a foreign body.
ALLOWED = (UnknownOperatorError, AttributeError)


@pytest.mark.slow
@pytest.mark.parametrize("switch_interval", [1e-5, 5e-3], indirect=True, ids=["10us", "5ms"])
def test_every_call_runs_one_generation(
    dispatcher: Dispatcher, ops: Ops, switch_interval: float
) -> None:
    x = np.ones(1)
    generations = [_define(dispatcher, 0)]
    held_packet = ops.gen.f
    counts = {"calls": 0, "wrong": 0}
    errors: list[BaseException] = []
    stop = threading.Event()

    def old_object() -> None:
        op = generations[-1]
        mine = float(generations.index(op))
        try:
            result = op(x)
        except RegistrationError as error:  # replaced or redefined meanwhile: said so, not run
            assert any(word in str(error) for word in ("replaced", "removed", "redefined"))
            return
        if result[0] != mine:
            counts["wrong"] += 1

    def fresh(spelling: Callable[[], Any]) -> Callable[[], None]:
        def call() -> None:
            try:
                result = spelling()
            except ALLOWED:
                return
            except RegistrationError as error:  # a packet bound to a replaced schema
                assert "redefined" in str(error) or "replaced" in str(error)
                return
            # The newest generation runs before the main thread has appended it.
            if not 0 <= result[0] <= len(generations) or result.shape != (1,):
                counts["wrong"] += 1

        return call

    spellings = [
        old_object,
        fresh(lambda: ops.gen.f(x)),
        fresh(lambda: held_packet(x)),
        fresh(lambda: dispatcher.find_op("gen::f")(x)),  # type: ignore[misc]
    ]

    def run(call: Callable[[], None]) -> None:
        while not stop.is_set():
            try:
                call()
                counts["calls"] += 1
            except BaseException as error:  # a foreign body, or an internal error
                errors.append(error)
                return

    threads = [threading.Thread(target=run, args=(call,)) for call in spellings]
    for thread in threads:
        thread.start()
    try:
        for generation in range(1, 300):
            generations.append(_define(dispatcher, generation))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    print(f"{switch_interval}: {counts['calls']} calls, {counts['wrong']} wrong, {len(errors)}")
    assert errors == []
    assert counts["wrong"] == 0
    assert counts["calls"] > 0


def test_a_held_packet_of_a_removed_op_says_so(dispatcher: Dispatcher, ops: Ops) -> None:
    op = _define(dispatcher, 0)
    packet = ops.gen.f
    x = np.ones(1)
    assert packet(x)[0] == 0.0
    op.remove()
    with pytest.raises(UnknownOperatorError, match="no longer defined"):
        packet(x)

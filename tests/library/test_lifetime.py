"""Removing one @custom_op, what removal frees, and lookups racing with writes."""

from __future__ import annotations

import gc
import linecache
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import customop
from customop.dispatch import Dispatcher, RegistrationHandle
from customop.exceptions import RegistrationError
from customop.library import Ops
from customop.library._custom_op import live_definition

CYCLES = 100_000


def _define(dispatcher: Dispatcher, name: str) -> customop.CustomOpDef[Any, Any]:
    return customop.custom_op(
        name, lambda x: x, mutates_args=(), schema="(Tensor x) -> Tensor", dispatcher=dispatcher
    )


def test_remove_undefines_the_op_and_frees_the_name(dispatcher: Dispatcher, ops: Ops) -> None:
    op = _define(dispatcher, "life::f")
    x = np.ones(2)
    assert ops.life.f(x) is x and op(x) is x
    op.remove()
    op.remove()  # idempotent
    assert dispatcher.find_op("life::f") is None
    assert "<customop generated life::f>" not in linecache.cache
    with pytest.raises(AttributeError, match="no namespace 'life'"):
        ops.life  # noqa: B018
    with pytest.raises(RegistrationError, match="was removed"):
        op(x)
    again = _define(dispatcher, "life::f")  # the name is free: not "already defined"
    assert again(x) is x


def test_handle_removes_the_op(dispatcher: Dispatcher) -> None:
    op = _define(dispatcher, "life::h")
    handle = op.registration
    assert isinstance(handle, RegistrationHandle)
    with handle:
        assert dispatcher.find_op("life::h") is not None
    assert dispatcher.find_op("life::h") is None


def test_closing_the_library_forgets_the_definition(dispatcher: Dispatcher) -> None:
    op = _define(dispatcher, "life::g")
    op._library.close()
    assert live_definition(dispatcher, "life::g") is None
    assert dispatcher.find_op("life::g") is None
    _define(dispatcher, "life::g")


def test_the_old_handle_spelling_still_works_and_warns(dispatcher: Dispatcher) -> None:
    op = _define(dispatcher, "life::old")
    with pytest.warns(DeprecationWarning, match="use .registration"):
        handle = op.handle
    with handle:
        assert dispatcher.find_op("life::old") is not None
    assert dispatcher.find_op("life::old") is None


def test_a_private_dispatcher_is_freed_with_its_ops() -> None:
    dispatcher = Dispatcher()
    op = _define(dispatcher, "life::p")
    op(np.ones(1))
    alive = weakref.ref(dispatcher)
    del dispatcher, op
    gc.collect()
    assert alive() is None


def _growth(cycle: Callable[[int], None]) -> int:
    """Memory blocks gained from the first fifth of CYCLES cycles to the last cycle.

    The first fifth fills customop's bounded memos (parsed names, named call
    code: a few thousand entries each, cleared when full), so what they hold
    is about the same at both marks; a leak of one object per cycle adds
    80,000 blocks in between.
    """
    marks = []
    for i in range(CYCLES):
        cycle(i)
        if i + 1 in (CYCLES // 5, CYCLES):
            gc.collect()
            marks.append(sys.getallocatedblocks())
    return marks[1] - marks[0]


@pytest.mark.slow  # 100,000 cycles: 10-20 s each on an idle machine
@pytest.mark.parametrize("through", ["definition", "customop.ops"])
def test_define_call_remove_cycles_hold_no_memory(through: str) -> None:
    dispatcher = Dispatcher()
    ops = Ops(dispatcher)
    x = np.ones(1)

    def cycle(i: int) -> None:
        op = _define(dispatcher, f"leak::op{i}")
        if through == "definition":
            op(x)
        else:
            getattr(ops.leak, f"op{i}")(x)
        op.remove()

    assert _growth(cycle) < 20_000
    assert dispatcher.defined_ops() == () and dispatcher._entries == {}
    assert not [name for name in linecache.cache if name.startswith("<customop generated leak")]


def test_lookup_racing_with_removal_raises_only_attribute_error(
    dispatcher: Dispatcher, ops: Ops
) -> None:
    errors: list[BaseException] = []
    stop = threading.Event()

    def look() -> None:
        while not stop.is_set():
            try:
                ops.race.f  # noqa: B018
            except AttributeError:
                pass
            except BaseException as error:  # the bug: an internal KeyError
                errors.append(error)
                return

    reader = threading.Thread(target=look)
    reader.start()
    try:
        for _ in range(2_000):
            _define(dispatcher, "race::f").remove()
    finally:
        stop.set()
        reader.join()
    assert errors == []


def test_redefinition_is_atomic_for_callers_through_ops(dispatcher: Dispatcher, ops: Ops) -> None:
    # Callers looking the op up anew for every call never see it undefined, nor
    # without its kernel, through the packet, the overload or the dispatcher.
    _define(dispatcher, "atomic::f")
    errors: list[BaseException] = []
    stop = threading.Event()
    x = np.ones(1)
    spellings: list[Callable[[], Any]] = [
        lambda: ops.atomic.f(x),
        lambda: ops.atomic.f.default(x),
        lambda: dispatcher.find_op("atomic::f")(x),  # type: ignore[misc]
    ]

    def call(spelling: Callable[[], Any]) -> None:
        while not stop.is_set():
            try:
                assert spelling() is x
            except BaseException as error:
                errors.append(error)
                return

    callers = [threading.Thread(target=call, args=(spelling,)) for spelling in spellings]
    for thread in callers:
        thread.start()
    try:
        for _ in range(500):
            _define(dispatcher, "atomic::f")
    finally:
        stop.set()
        for thread in callers:
            thread.join()
    assert errors == []


def test_a_registered_op_keeps_few_gc_tracked_objects(dispatcher: Dispatcher) -> None:
    """Each object an op keeps is visited by every full gc collection (issue #12)."""

    def body(x: np.ndarray, y: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
        return x

    def define(i: int) -> customop.CustomOpDef[Any, Any]:
        return customop.custom_op(f"gcobj::op{i}", body, mutates_args=(), dispatcher=dispatcher)

    kept = [define(i) for i in range(10)]  # namespace and memos exist from here on
    gc.collect()
    before = len(gc.get_objects())
    kept += [define(i) for i in range(10, 210)]
    gc.collect()
    per_op = (len(gc.get_objects()) - before) / 200
    # Before 3.11 every instance __dict__ is a gc-tracked dict of its own (3.11 keeps
    # attribute values in the object until a dict is asked for): two more per op.
    limit = 19 if sys.version_info >= (3, 11) else 21
    assert per_op <= limit, f"{per_op:.1f} gc-tracked objects per op"
    for op in kept:
        op.remove()

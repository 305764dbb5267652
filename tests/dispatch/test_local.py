"""include_keys / exclude_keys: per thread and per asyncio task; and the epoch clock."""

from __future__ import annotations

import asyncio
import gc
import threading

import numpy as np
import pytest

from customop.dispatch import (
    Dispatcher,
    DispatchKey,
    DispatchKeySet,
    epoch,
    exclude_keys,
    include_keys,
    local_keys,
)
from customop.dispatch._local import DEFAULT_LOCAL, LOCAL_KEYS, local_state

K = DispatchKey


@pytest.fixture
def fake_op(dispatcher: Dispatcher) -> Dispatcher:
    dispatcher.register_def("t::op(Tensor x) -> Tensor")
    dispatcher.register_impl("t::op", "CPU", lambda x: "cpu")
    dispatcher.register_impl("t::op", "Fake", lambda x: "fake")
    return dispatcher


def test_include_adds_keys_to_calls(fake_op: Dispatcher) -> None:
    op = fake_op.find_schema_or_throw("t::op")
    assert op(np.ones(1)) == "cpu"
    with include_keys(K.Fake) as added:
        assert added == DispatchKeySet(K.Fake)
        assert op(np.ones(1)) == "fake"
    assert op(np.ones(1)) == "cpu"


def test_exclude_wins_over_include_and_nests(fake_op: Dispatcher) -> None:
    op = fake_op.find_schema_or_throw("t::op")
    with include_keys(K.Fake), exclude_keys(K.Fake):
        assert op(np.ones(1)) == "cpu"
        assert local_keys() == (DispatchKeySet(K.Fake), DispatchKeySet(K.Fake))
    assert local_keys() == (DispatchKeySet(), DispatchKeySet())


def test_alias_keys_expand(fake_op: Dispatcher) -> None:
    with exclude_keys(K.Autograd):
        assert local_keys()[1] == K.Autograd.expansion


def test_guard_reentry_restores_each_level() -> None:
    guard = include_keys(K.Tracer)
    with guard:
        with guard:
            assert local_keys()[0] == DispatchKeySet(K.Tracer)
        assert local_keys()[0] == DispatchKeySet(K.Tracer)
    assert local_keys()[0] == DispatchKeySet()
    assert repr(guard) == "include_keys(Tracer)"


def test_threads_do_not_share_local_keys() -> None:
    seen: list[DispatchKeySet] = []
    inside = threading.Event()
    done = threading.Event()

    def other() -> None:
        inside.wait(5)
        seen.append(local_keys()[0])
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with include_keys(K.Fake):
        inside.set()
        done.wait(5)
    thread.join(5)
    assert seen == [DispatchKeySet()]


def test_asyncio_tasks_do_not_share_local_keys(fake_op: Dispatcher) -> None:
    op = fake_op.find_schema_or_throw("t::op")
    results: dict[str, list[str]] = {"faking": [], "plain": []}

    async def faking() -> None:
        with include_keys(K.Fake):
            for _ in range(3):
                results["faking"].append(op(np.ones(1)))
                await asyncio.sleep(0)

    async def plain() -> None:
        for _ in range(3):
            results["plain"].append(op(np.ones(1)))
            await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(faking(), plain())

    asyncio.run(main())
    assert results == {"faking": ["fake"] * 3, "plain": ["cpu"] * 3}


def test_local_keys_refuse_names() -> None:
    with pytest.raises(TypeError) as caught:
        include_keys("Fake")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "include_keys: expected DispatchKey or DispatchKeySet arguments, got 'Fake'. Local key "
        "sets hold dispatch keys only. Convert a name with DispatchKey.from_name first."
    )


def test_epoch_advances_on_every_registration(dispatcher: Dispatcher) -> None:
    before = epoch.token
    handle = dispatcher.register_def("t::op(Tensor x) -> Tensor")
    after_def = epoch.token
    handle.remove()
    assert before is not after_def and after_def is not epoch.token
    assert epoch.token.number > after_def.number > before.number


def test_local_key_blocks_leave_the_epoch_alone() -> None:
    # Registration caches (packets, graph plans, call caches) stay valid across
    # FakeTensorMode / trace / opcheck blocks: call caches key on the local keys.
    before, calls = epoch.token, epoch.calls
    with include_keys(K.Fake), exclude_keys(K.CPU):
        assert epoch.token is before and epoch.calls is calls
    assert epoch.token is before and epoch.calls is calls
    assert repr(before).startswith("<Epoch ")


def test_same_local_keys_are_one_object_while_they_live() -> None:
    # Interned: calls cached in one FakeTensorMode block match in the next.
    with include_keys(K.Fake):
        first = LOCAL_KEYS.get()
    with include_keys(K.Fake):
        assert LOCAL_KEYS.get() is first
    with exclude_keys(K.Fake):
        assert LOCAL_KEYS.get() is not first


class _Holder:
    """A CacheHolder for the epoch clock's push invalidation."""

    def __init__(self) -> None:
        self.cache: object = "empty"

    def clear_cache(self) -> None:
        self.cache = "empty"


def test_fill_is_emptied_by_the_next_advance(dispatcher: Dispatcher) -> None:
    holder = _Holder()
    epoch.fill(epoch.token, holder, "entry")
    assert holder.cache == "entry"
    dispatcher.register_def("t::op(Tensor x) -> Tensor").remove()
    assert holder.cache == "empty"


def test_fill_under_a_stale_token_does_nothing(dispatcher: Dispatcher) -> None:
    # An entry computed before a registration change must never be stored after it.
    holder = _Holder()
    token = epoch.token
    dispatcher.register_def("t::op(Tensor x) -> Tensor").remove()
    epoch.fill(token, holder, "stale")
    assert holder.cache == "empty"


def test_debug_blocks_empty_call_caches_but_not_registration_caches() -> None:
    # debug_checks must route every call through the checking slow path.
    holder = _Holder()
    before, calls = epoch.token, epoch.calls
    epoch.fill(calls, holder, "entry")
    epoch._local_block(+1)
    try:
        assert holder.cache == "empty" and not epoch.cacheable
        epoch.fill(calls, holder, "stale")  # computed before the block began
        assert holder.cache == "empty"
    finally:
        epoch._local_block(-1)
    assert epoch.token is before and epoch.cacheable


def test_holder_filled_twice_is_emptied_once(dispatcher: Dispatcher) -> None:
    holder = _Holder()
    cleared: list[object] = []
    holder.clear_cache = lambda: cleared.append(holder)  # type: ignore[method-assign]
    for value in ("a", "b", "c"):
        epoch.fill(epoch.token, holder, value)
    dispatcher.register_def("t::op(Tensor x) -> Tensor").remove()
    assert cleared == [holder]


def test_local_state_default_only_while_no_context_has_other_keys() -> None:
    assert local_state.default is DEFAULT_LOCAL
    with include_keys(K.Fake):
        assert local_state.default is None
    gc.collect()
    assert local_state.default is DEFAULT_LOCAL


def test_local_state_waits_for_a_copied_context() -> None:
    # A task created inside a block keeps the block's keys after it ends.
    async def main() -> None:
        release = asyncio.Event()

        async def child() -> tuple[DispatchKeySet, DispatchKeySet]:
            await release.wait()
            return local_keys()

        with include_keys(K.Fake):
            task = asyncio.ensure_future(child())
            await asyncio.sleep(0)
        assert local_state.default is None  # the task's context still has Fake
        release.set()
        included, _ = await task
        assert K.Fake in included
        del task

    asyncio.run(main())
    gc.collect()
    assert local_state.default is DEFAULT_LOCAL

"""8 writer threads register and remove impls and fallbacks while 8 threads call the ops.

Bounded in time (about 1.5 s of traffic); what it asserts does not depend on the
interleaving: no exception but MissingKernelError, every call ran a kernel that
was registered at some moment during that call and belongs to the called op and
key, and the final registry equals what the writers left.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from customop.dispatch import Dispatcher, DispatchKey, OperatorHandle
from customop.exceptions import MissingKernelError
from tests.dispatch.doubles import CudaArray

OPS = tuple(f"t::op{i}" for i in range(4))
WRITERS = 8
CALLERS = 8
TRAFFIC_SECONDS = 1.5
_clock = itertools.count()


@dataclass
class Lifetime:
    """A kernel is live at most from ``start`` (before registering) to ``end`` (after removal)."""

    owner: tuple[str, str]
    start: int
    end: float = float("inf")


@dataclass
class Call:
    op: str
    key: str
    result: str | None
    start: int
    end: int


def _kernel(name: str) -> Any:
    def kernel(x: Any) -> str:
        return name

    return kernel


def _fallback(name: str) -> Any:
    def kernel(op: OperatorHandle, keyset: Any, x: Any) -> str:
        return name

    return kernel


class World:
    def __init__(self) -> None:
        self.d = Dispatcher()
        self.d.register_array_type(CudaArray, DispatchKey.CUDA)
        for op in OPS:
            self.d.register_def(f"{op}(Tensor x) -> Tensor")
        self.lifetimes: dict[str, Lifetime] = {}
        self.calls: list[Call] = []
        self.errors: list[BaseException] = []
        self.start = threading.Barrier(WRITERS + CALLERS)
        self.deadline = 0.0

    def write(self, writer: int) -> None:
        rng = random.Random(writer)
        op, key = OPS[writer % 4], ("CPU" if writer < 4 else "CUDA")
        owns_fallback = writer in (0, 4)
        self.start.wait()
        for round_ in itertools.count():
            if time.monotonic() > self.deadline:
                break
            names = [f"w{writer}-{round_}-{i}" for i in range(rng.randint(1, 3))]
            handles = [
                self._register(name, (op, key), self.d.register_impl, op, key) for name in names
            ]
            if owns_fallback:
                fb = f"fb{writer}-{round_}"
                handles.append(self._register(fb, ("fallback", key), self.d.register_fallback, key))
                names.append(fb)
            order = list(zip(names, handles, strict=True))
            rng.shuffle(order)
            for name, handle in order:
                handle.remove()
                self.lifetimes[name].end = next(_clock)
        self._register(f"w{writer}-final", (op, key), self.d.register_impl, op, key)

    def _register(self, name: str, owner: tuple[str, str], register: Any, *args: Any) -> Any:
        self.lifetimes[name] = Lifetime(owner, next(_clock))
        kernel = _fallback(name) if owner[0] == "fallback" else _kernel(name)
        return register(*args, kernel)

    def call(self, caller: int) -> None:
        rng = random.Random(1000 + caller)
        handles = {op: self.d.find_schema_or_throw(op) for op in OPS}
        arrays = {"CPU": np.ones(1), "CUDA": CudaArray()}
        self.start.wait()
        while time.monotonic() < self.deadline:
            op, key = rng.choice(OPS), rng.choice(("CPU", "CUDA"))
            start = next(_clock)
            try:
                result = handles[op](arrays[key])
            except MissingKernelError:
                result = None
            self.calls.append(Call(op, key, result, start, next(_clock)))

    def run(self, target: Any, index: int) -> None:
        try:
            target(index)
        except BaseException as error:  # collected, asserted empty by the test
            self.errors.append(error)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::customop.exceptions.KernelOverrideWarning")
def test_concurrent_registration_and_calls() -> None:
    world = World()
    world.deadline = time.monotonic() + TRAFFIC_SECONDS
    threads = [threading.Thread(target=world.run, args=(world.write, i)) for i in range(WRITERS)]
    threads += [threading.Thread(target=world.run, args=(world.call, i)) for i in range(CALLERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert world.errors == []
    assert world.calls and any(call.result is not None for call in world.calls)
    for call in world.calls:
        if call.result is None:
            continue
        life = world.lifetimes[call.result]
        assert life.owner in ((call.op, call.key), ("fallback", call.key)), call
        assert life.start < call.end and life.end > call.start, (call, life)
    _assert_final_registry(world.d)


def _assert_final_registry(d: Dispatcher) -> None:
    snap = d.snapshot()
    kernels = {(k.op, k.key, k.kernel, k.active) for info in snap.operators for k in info.kernels}
    expected = {(OPS[w % 4], "CPU" if w < 4 else "CUDA", "kernel", True) for w in range(WRITERS)}
    assert kernels == expected
    assert [fb.key for fb in snap.fallbacks] == [k.name for k in DispatchKey.Autograd.expansion]
    for w in range(WRITERS):
        op, array = OPS[w % 4], np.ones(1) if w < 4 else CudaArray()
        assert d.find_schema_or_throw(op)(array) == f"w{w}-final"


class _SignallingLock:
    """The dispatcher's lock, which also says when another thread asks for it."""

    def __init__(self, lock: Any) -> None:
        self.lock = lock
        self.asked = threading.Event()
        self.owner = threading.get_ident()

    def __enter__(self) -> None:
        if threading.get_ident() != self.owner:
            self.asked.set()
        self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_a_call_that_reads_a_table_mid_write_waits_for_its_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A @custom_op redefinition defines the op, then registers its kernels, in one
    # write. A call that read the table in between must not report a missing kernel.
    dispatcher = Dispatcher()
    handle = dispatcher.register_def("mid::f(Tensor x) -> Tensor")
    op = dispatcher.find_op("mid::f")
    assert op is not None
    signalling = _SignallingLock(dispatcher._lock)
    monkeypatch.setattr(dispatcher, "_lock", signalling)
    x = np.ones(1)
    outcome: list[Any] = []

    def call() -> None:
        try:
            outcome.append(op(x))
        except BaseException as error:
            outcome.append(error)

    caller = threading.Thread(target=call)
    with signalling:  # the write: the def is visible, its kernel not yet
        caller.start()
        asked = signalling.asked.wait(timeout=10)
        kernel = dispatcher.register_impl("mid::f", DispatchKey.CPU, lambda x: x)
    caller.join(timeout=10)
    assert asked, "the call raised without waiting for the write"
    assert len(outcome) == 1 and outcome[0] is x
    kernel.remove()
    handle.remove()


def test_find_op_waits_out_a_redefinition(monkeypatch: pytest.MonkeyPatch) -> None:
    # A redefinition removes the def and adds the new one in one write: find_op
    # in another thread must not answer "not defined" from its middle.
    dispatcher = Dispatcher()
    old = dispatcher.register_def("mid::g(Tensor x) -> Tensor")
    signalling = _SignallingLock(dispatcher._lock)
    monkeypatch.setattr(dispatcher, "_lock", signalling)
    found: list[OperatorHandle | None] = []
    finder = threading.Thread(target=lambda: found.append(dispatcher.find_op("mid::g")))
    with signalling:  # the write
        old.remove()
        finder.start()
        asked = signalling.asked.wait(timeout=10)
        new = dispatcher.register_def("mid::g(Tensor x) -> Tensor")
    finder.join(timeout=10)
    assert asked, "find_op answered without waiting for the write"
    assert len(found) == 1 and found[0] is not None and str(found[0].name) == "mid::g"
    new.remove()

"""Costs that must not grow with the number of ops (issue #12), in one run.

    python benchmarks/bench_scaling.py

* inline ``customop.ops.ns.name(x, y)`` with 10, 1,000 and 10,000 other ops
  defined, as a ratio to the ``*args`` wrapper: flat, and <= 2x;
* registering ``@custom_op``s with gc on: the per-op cost at 50,000 ops within
  1.3x of the cost at 100 ops (after a warm-up; see ``registration_rows``);
* removing them again with ``op.remove()`` (where it exists), per op.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see bench_dispatch.py

import gc
import statistics
import subprocess
import sys
import time
import timeit
from typing import Any

import numpy as np

import customop

OTHER_OPS = (10, 1_000, 10_000)
REGISTRATIONS = 50_000
SMALL = 100
CHUNKS = 10
SMALL_ROUNDS = 66  # 6 before each of the CHUNKS chunks of the large run, and 6 after


def kernel(*args: Any, **kwargs: Any) -> Any:
    return args[0]


def wrapper(*args: Any, **kwargs: Any) -> Any:
    return kernel(*args, **kwargs)


def best_pair_ns(call: Any, floor: Any, rounds: int = 25) -> tuple[float, float]:
    """Best ns per call of ``call`` and of ``floor``, timed in alternating ~10 ms
    rounds, so that the machine's drifting speed hits both alike."""
    numbers = [max(1, int(0.01 / timeit.timeit(fn, number=3) * 3)) for fn in (call, floor)]
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for i, (fn, number) in enumerate(zip((call, floor), numbers, strict=True)):
            best[i] = min(best[i], timeit.timeit(fn, number=number) / number * 1e9)
    return best[0], best[1]


def define_others(start: int, stop: int) -> list[Any]:
    return [
        customop.custom_op(
            f"scaleother::op{i}", kernel, mutates_args=(), schema="(Tensor x, Tensor y) -> Tensor"
        )
        for i in range(start, stop)
    ]


def inline_rows() -> list[tuple[int, float, float]]:
    x = np.zeros(4)

    @customop.custom_op("scale::f", mutates_args=())
    def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x

    # Warm-up: the first half second of timing in a fresh process reads ~15% slow.
    best_pair_ns(lambda: customop.ops.scale.f(x, x), lambda: wrapper(x, x), rounds=40)
    rows = []
    defined = 0
    others: list[Any] = []
    for count in OTHER_OPS:
        others += define_others(defined, count)
        defined = count
        call, floor = best_pair_ns(lambda: customop.ops.scale.f(x, x), lambda: wrapper(x, x))
        rows.append((count, call, floor))
    for op in others:
        remove(op)
    return rows


def remove(op: Any) -> None:
    if hasattr(op, "remove"):
        op.remove()
    else:  # before op.remove() existed
        op._library.close()


def body(x: np.ndarray, y: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    return x


def register_us(namespace: str, start: int, stop: int, ops: list[Any]) -> float:
    """Registers ops ``start..stop-1`` (appended to ``ops``): µs per op, gc on."""
    begin = time.perf_counter()
    for i in range(start, stop):
        ops.append(customop.custom_op(f"{namespace}::op{i}", body, mutates_args=()))
    return (time.perf_counter() - begin) / (stop - start) * 1e6


def warm_up() -> None:
    """Register and remove 2,000 ops: caches and code paths warm, registry empty."""
    warm: list[Any] = []
    register_us("scalewarm", 0, 2_000, warm)
    for op in warm:
        remove(op)


def small_round(r: int) -> float:
    """µs per op of the registrations that take a registry from SMALL/2 to SMALL ops."""
    ops: list[Any] = []
    register_us(f"scalesmall{r}", 0, SMALL // 2, ops)
    cost = register_us(f"scalesmall{r}", SMALL // 2, SMALL, ops)
    for op in ops:
        remove(op)
    return cost


def small_worker() -> None:
    """The child process of `registration_rows`: one small round per line read."""
    warm_up()
    print("ready", flush=True)
    for line in sys.stdin:
        print(small_round(int(line)), flush=True)


def registration_rows() -> tuple[float, float, float, float, float]:
    """Per-op registration cost at SMALL and at REGISTRATIONS ops, gc on, and removal.

    The cost "at n ops" is the mean µs per op of the registrations that take
    the registry from n/2 to n ops, gc's collections included where they fall
    (25,000 registrations at 50,000 ops; SMALL_ROUNDS rounds of 50 at 100 ops),
    so both means span several full collections at their natural rate. gc's
    cost depends on the whole process's heap, so the 100-op rounds run in a
    child process with only them, interleaved with the large run in CHUNKS
    (the parent waits while the child runs). The growth is the mean, over
    the chunks, of a chunk's cost over that of the rounds just before and
    after it: the machine's speed drifts in phases longer than a chunk.

    Returns:
        The cost at SMALL and at REGISTRATIONS ops, the growth, µs per removal,
        and one full gc collection's ms at REGISTRATIONS ops.
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, __file__, "--small-worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdin is not None and child.stdout is not None  # PIPE above
    child.stdout.readline()  # "ready": warmed up
    warm_up()
    small: list[float] = []

    def small_rounds() -> float:
        start = len(small)
        for _ in range(SMALL_ROUNDS // (CHUNKS + 1)):
            print(len(small), file=child.stdin, flush=True)
            small.append(float(child.stdout.readline()))
        return statistics.mean(small[start:])

    ops: list[Any] = []
    register_us("scalereg", 0, REGISTRATIONS // 2, ops)
    chunk = REGISTRATIONS // 2 // CHUNKS
    large, ratios, before = [], [], small_rounds()
    for start in range(REGISTRATIONS // 2, REGISTRATIONS, chunk):
        large.append(register_us("scalereg", start, start + chunk, ops))
        after = small_rounds()
        ratios.append(large[-1] / statistics.mean((before, after)))
        before = after
    child.stdin.close()
    child.wait()
    gc_ms = full_collection_ms()
    begin = time.perf_counter()
    for op in ops:
        remove(op)
    removal = (time.perf_counter() - begin) / len(ops) * 1e6
    growth = statistics.mean(ratios)
    return statistics.mean(small), statistics.mean(large), growth, removal, gc_ms


def full_collection_ms() -> float:
    """One full gc collection over the process as it is (a diagnostic, not a row)."""
    begin = time.perf_counter()
    gc.collect()
    return (time.perf_counter() - begin) * 1e3


def main() -> None:
    print(f"{'other ops defined':<20} {'inline ns':>10} {'wrapper ns':>11} {'ratio':>7}")
    for count, call, floor in inline_rows():
        print(f"{count:<20,} {call:>10.0f} {floor:>11.0f} {call / floor:>6.2f}x")
    small, large, growth, removal, gc_ms = registration_rows()
    print("\n@custom_op registration, gc on (mean µs per op from n/2 to n ops, interleaved)")
    print(
        f"  at {SMALL:,} ops: {small:.1f}   at {REGISTRATIONS:,} ops: {large:.1f}   "
        f"growth {growth:.2f}x (target <= 1.3x)"
    )
    print(f"  removal: {removal:.1f} µs per op")
    print(f"  one full gc collection at {REGISTRATIONS:,} ops: {gc_ms:.0f} ms")


if __name__ == "__main__":
    small_worker() if sys.argv[1:] == ["--small-worker"] else main()

"""Costs that must not grow with the number of ops (issue #12), in one run.

    python benchmarks/bench_scaling.py

* inline ``customop.ops.ns.name(x, y)`` with 10, 1,000 and 10,000 other ops
  defined, as a ratio to the ``*args`` wrapper: flat, and <= 2x;
* registering 50,000 ``@custom_op``s with gc on: the per-op cost of the last
  1,000 within 1.3x of the first 1,000 (after a warm-up);
* removing them again with ``op.remove()`` (where it exists), per op.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see bench_dispatch.py

import time
import timeit
from typing import Any

import numpy as np

import customop

OTHER_OPS = (10, 1_000, 10_000)
REGISTRATIONS = 50_000
BATCH = 1_000


def kernel(*args: Any, **kwargs: Any) -> Any:
    return args[0]


def wrapper(*args: Any, **kwargs: Any) -> Any:
    return kernel(*args, **kwargs)


def best_ns(fn: Any, rounds: int = 25) -> float:
    """Best of ``rounds`` rounds of ~10 ms each, in ns per call."""
    number = max(1, int(0.01 / timeit.timeit(fn, number=3) * 3))
    return min(timeit.repeat(fn, number=number, repeat=rounds)) / number * 1e9


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

    rows = []
    defined = 0
    others: list[Any] = []
    for count in OTHER_OPS:
        others += define_others(defined, count)
        defined = count
        call = best_ns(lambda: customop.ops.scale.f(x, x))
        floor = best_ns(lambda: wrapper(x, x))
        rows.append((count, call, floor))
    for op in others:
        remove(op)
    return rows


def remove(op: Any) -> None:
    if hasattr(op, "remove"):
        op.remove()
    else:  # before op.remove() existed
        op._library.close()


def registration_rows() -> tuple[list[float], float]:
    """µs per @custom_op of each batch of BATCH, and µs per removal."""

    def body(x: np.ndarray, y: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
        return x

    warm = [customop.custom_op(f"scalewarm::op{i}", body, mutates_args=()) for i in range(2_000)]
    for op in warm:
        remove(op)
    ops = []
    per_batch = []
    for start in range(0, REGISTRATIONS, BATCH):
        begin = time.perf_counter()
        for i in range(start, start + BATCH):
            ops.append(customop.custom_op(f"scalereg::op{i}", body, mutates_args=()))
        per_batch.append((time.perf_counter() - begin) / BATCH * 1e6)
    begin = time.perf_counter()
    for op in ops:
        remove(op)
    return per_batch, (time.perf_counter() - begin) / len(ops) * 1e6


def main() -> None:
    print(f"{'other ops defined':<20} {'inline ns':>10} {'wrapper ns':>11} {'ratio':>7}")
    for count, call, floor in inline_rows():
        print(f"{count:<20,} {call:>10.0f} {floor:>11.0f} {call / floor:>6.2f}x")
    per_batch, removal = registration_rows()
    first, last = min(per_batch[:3]), min(per_batch[-3:])
    print(f"\n@custom_op registration, {REGISTRATIONS:,} ops, gc on (µs per op, best of 3 batches)")
    print(
        f"  first {3 * BATCH:,}: {first:.1f}   last {3 * BATCH:,}: {last:.1f}   "
        f"growth {last / first:.2f}x (target <= 1.3x)"
    )
    print(f"  removal: {removal:.1f} µs per op")


if __name__ == "__main__":
    main()

"""Call and registration speed of customop ops vs plain Python and torch, in one run.

    python benchmarks/bench_dispatch.py

Floors: the kernel called directly, and ``def w(*a, **k): return kernel(*a, **k)``.
Targets (DESIGN §8, ratios to the wrapper floor measured in this same run):
CustomOpDef and pre-bound OpOverload calls <= 1.5x, packet calls <= 2.5x,
>= 30x faster than ``torch.library.custom_op``; registering one @custom_op
<= 100 µs. With torch installed, torch's custom_op and Library ops on torch
tensors run in the same process.
"""

from __future__ import annotations

import time
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

import customop
from customop import Dispatcher
from customop.library import Ops

REPEAT = 7


def ns_per_call(fn: Callable[[], object], number: int = 200_000) -> float:
    """Best of REPEAT runs, minus the cost of the timing lambda itself."""
    empty = min(timeit.repeat(lambda: None, number=number, repeat=REPEAT))
    best = min(timeit.repeat(fn, number=number, repeat=REPEAT))
    return (best - empty) / number * 1e9


def kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x


def wrapper(*args: Any, **kwargs: Any) -> Any:
    return kernel(*args, **kwargs)


def customop_rows(d: Dispatcher) -> list[tuple[str, float]]:
    x = np.zeros(4)

    @customop.custom_op("bench::f", mutates_args=(), dispatcher=d)
    def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x

    @customop.custom_op("bench::five", mutates_args=(), dispatcher=d)
    def five(
        x: np.ndarray, ys: list[np.ndarray], n: int, scale: float = 1.0, *, flag: bool = False
    ) -> np.ndarray:
        return x

    ops = Ops(d)
    overload = ops.bench.f.default
    packet = ops.bench.f
    ys = [x, x]
    handle = d.find_schema_or_throw("bench::f")
    return [
        ("CustomOpDef  f(x, y)", ns_per_call(lambda: f(x, x))),
        ("OpOverload   ops.bench.f.default(x, y)", ns_per_call(lambda: overload(x, x))),
        ("packet       ops.bench.f(x, y)", ns_per_call(lambda: packet(x, x))),
        (
            "5 args       five(x, [x, x], 3, 2.0, flag=True)",
            ns_per_call(lambda: five(x, ys, 3, 2.0, flag=True), number=50_000),
        ),
        ("OperatorHandle (generic *args path)", ns_per_call(lambda: handle(x, x))),
    ]


def registration_us(d: Dispatcher, count: int = 300) -> tuple[float, float]:
    """µs per @custom_op: same signature each time, and a new signature each time."""

    def same(i: int) -> None:
        @customop.custom_op(f"reg::same{i}", mutates_args=(), dispatcher=d)
        def op(x: np.ndarray, y: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
            return x

    def varied(i: int) -> None:
        # A fresh parameter name per op: nothing about the signature is shared.
        schema = f"(Tensor x, Tensor y_{i}, *, float alpha=1.) -> Tensor"
        customop.custom_op(f"reg::varied{i}", kernel, mutates_args=(), schema=schema, dispatcher=d)

    results = []
    for define in (same, varied):
        start = time.perf_counter()
        for i in range(count):
            define(i)
        results.append((time.perf_counter() - start) / count * 1e6)
    return results[0], results[1]


def torch_rows() -> list[tuple[str, float]]:
    try:
        import torch
    except ImportError:
        return []

    def body(x: Any, y: Any) -> Any:
        return x.clone()

    schema = "(Tensor x, Tensor y) -> Tensor"
    f = torch.library.custom_op("benchtorch::f", body, mutates_args=(), schema=schema)

    lib = torch.library.Library("benchtorchlib", "DEF")
    lib.define("g(Tensor x, Tensor y) -> Tensor")
    lib.impl("g", lambda x, y: x, "CPU")
    g = torch.ops.benchtorchlib.g.default
    t = torch.zeros(4)
    rows = [
        ("torch.library.custom_op f(x, y)", ns_per_call(lambda: f(t, t), number=20_000)),
        ("torch Library op (Python kernel)", ns_per_call(lambda: g(t, t), number=50_000)),
    ]
    start = time.perf_counter()
    for i in range(50):
        torch.library.custom_op(f"benchtorch::r{i}", body, mutates_args=(), schema=schema)
    rows.append(
        ("torch custom_op registration (µs)", (time.perf_counter() - start) / 50 * 1e6 * 1000)
    )
    return rows  # fmt: skip


def main() -> None:
    x = np.zeros(4)
    floor_kernel = ns_per_call(lambda: kernel(x, x))
    floor_wrapper = ns_per_call(lambda: wrapper(x, x))
    rows = customop_rows(Dispatcher())
    ours = dict(rows)
    print(f"{'call':<48} {'ns':>8} {'x wrapper':>10}")
    print(
        f"{'kernel(x, y) directly':<48} {floor_kernel:>8.0f} {floor_kernel / floor_wrapper:>10.2f}"
    )
    print(f"{'wrapper w(*a, **k) (the floor)':<48} {floor_wrapper:>8.0f} {1:>10.2f}")
    for name, value in rows:
        print(f"{name:<48} {value:>8.0f} {value / floor_wrapper:>10.2f}")
    extra = torch_rows()
    for name, value in extra:
        if "registration" in name:
            continue
        print(f"{name:<48} {value:>8.0f} {value / floor_wrapper:>10.2f}")
    same, varied = registration_us(Dispatcher())
    print(f"\n@custom_op registration: {same:.0f} µs (inferred), {varied:.0f} µs (schema given)")
    if extra:
        torch_op = dict(extra)["torch.library.custom_op f(x, y)"]
        speedup = torch_op / ours["CustomOpDef  f(x, y)"]
        print(f"vs torch.library.custom_op call: {speedup:.0f}x faster (target >= 30x)")
        torch_reg = dict(extra)["torch custom_op registration (µs)"] / 1000
        print(f"torch custom_op registration: {torch_reg:.0f} µs")
    ratios = [value / floor_wrapper for value in ours.values()]
    print(
        f"targets: CustomOpDef {ratios[0]:.2f}x (<= 1.5x), OpOverload {ratios[1]:.2f}x "
        f"(<= 1.5x), packet {ratios[2]:.2f}x (<= 2.5x)"
    )


if __name__ == "__main__":
    main()

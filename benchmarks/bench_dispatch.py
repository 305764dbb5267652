"""Call and registration speed of customop ops vs plain Python and torch, in one run.

    python benchmarks/bench_dispatch.py

Floors: the kernel called directly, and ``def w(*a, **k): return kernel(*a, **k)``.
Targets (DESIGN §8, ratios to the wrapper floor measured in this same run):
CustomOpDef and pre-bound OpOverload calls <= 1.5x, packet calls <= 2.5x,
>= 30x faster than ``torch.library.custom_op``; registering one @custom_op
<= 100 µs. With torch installed, torch's custom_op and Library ops on torch
tensors run in the same process.

NOTE: how the timing copes with a shared, noisy machine. Every call is timed in
ROUNDS rounds, and each round times every call once, one after another; a
call's figure is its best round. Noise that lasts a few milliseconds then
slows one round of everything, not all the rounds of one call, so the ratios
of best rounds hold still from run to run. Registrations are timed the same
way, in batches.
"""

from __future__ import annotations

import os

# NOTE: numpy's OpenBLAS starts worker threads that keep spinning on this kind
# of small shared VM, taking execution resources from the timed thread: they
# made registrations ~50% slower until torch, which reconfigures them, was
# imported. Nothing timed here calls BLAS, so one thread is exact.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import Timed, best_ns

import customop
from customop import Dispatcher
from customop.library import Ops

ROUNDS = 60
# A registration round is a few ms; more of them span the machine's slow spells.
REGISTRATION_ROUNDS = 100


def kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x


def wrapper(*args: Any, **kwargs: Any) -> Any:
    return kernel(*args, **kwargs)


def customop_calls(d: Dispatcher) -> Timed:
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
    return {
        "kernel(x, y) directly": (lambda: kernel(x, x), 20_000),
        "wrapper w(*a, **k) (the floor)": (lambda: wrapper(x, x), 20_000),
        "CustomOpDef  f(x, y)": (lambda: f(x, x), 20_000),
        "OpOverload   ops.bench.f.default(x, y)": (lambda: overload(x, x), 20_000),
        "packet       ops.bench.f(x, y)": (lambda: packet(x, x), 20_000),
        "5 args       five(x, [x, x], 3, 2.0, flag=True)": (
            lambda: five(x, ys, 3, 2.0, flag=True),
            8_000,
        ),
        "OperatorHandle (generic *args path)": (lambda: handle(x, x), 8_000),
    }


def torch_calls() -> Timed:
    try:
        import torch
    except ImportError:
        return {}

    def body(x: Any, y: Any) -> Any:
        return x.clone()

    schema = "(Tensor x, Tensor y) -> Tensor"
    f = torch.library.custom_op("benchtorch::f", body, mutates_args=(), schema=schema)
    lib = torch.library.Library("benchtorchlib", "DEF")
    lib.define("g(Tensor x, Tensor y) -> Tensor")
    lib.impl("g", lambda x, y: x, "CPU")
    g = torch.ops.benchtorchlib.g.default
    t = torch.zeros(4)
    torch_calls.keep = lib  # type: ignore[attr-defined]  # the library must outlive the timing
    return {
        "torch.library.custom_op f(x, y)": (lambda: f(t, t), 800),
        "torch Library op (Python kernel)": (lambda: g(t, t), 4_000),
    }


def customop_registrations(d: Dispatcher) -> dict[str, tuple[Callable[[], None], int]]:
    counter = iter(range(10**9))

    def same() -> None:
        @customop.custom_op(f"reg::same{next(counter)}", mutates_args=(), dispatcher=d)
        def op(x: np.ndarray, y: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
            return x

    def varied() -> None:
        # A fresh parameter name per op: nothing about the signature is shared.
        i = next(counter)
        schema = f"(Tensor x, Tensor y_{i}, *, float alpha=1.) -> Tensor"
        customop.custom_op(f"reg::varied{i}", kernel, mutates_args=(), schema=schema, dispatcher=d)

    return {"@custom_op, schema inferred": (same, 40), "@custom_op, schema given": (varied, 40)}


def torch_registrations() -> dict[str, tuple[Callable[[], None], int]]:
    import torch

    counter = iter(range(10**9))

    def torch_op() -> None:
        torch.library.custom_op(
            f"benchtorch::r{next(counter)}",
            lambda x, y: x.clone(),
            mutates_args=(),
            schema="(Tensor x, Tensor y) -> Tensor",
        )

    return {"torch.library.custom_op": (torch_op, 5)}


def warm_up(makers: dict[str, tuple[Callable[[], None], int]], seconds: float = 2.0) -> None:
    """Register for a while first: a process's first seconds of work run slower here."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for make, count in makers.values():
            for _ in range(count):
                make()


def best_us(
    makers: dict[str, tuple[Callable[[], None], int]], rounds: int = REGISTRATION_ROUNDS
) -> dict[str, float]:
    """µs per registration of each kind: its best batch, kinds interleaved."""
    best = dict.fromkeys(makers, float("inf"))
    for _ in range(rounds):
        for name, (make, count) in makers.items():
            start = time.perf_counter()
            for _ in range(count):
                make()
            best[name] = min(best[name], (time.perf_counter() - start) / count * 1e6)
    return best


def main() -> None:
    # NOTE: customop's registrations are timed twice: first before torch is
    # imported (a customop-only process), then beside torch's own. Importing
    # torch adds ~150k objects that every full garbage collection scans.
    warm_up(customop_registrations(Dispatcher()))
    alone = best_us(customop_registrations(Dispatcher()))
    timed = {**customop_calls(Dispatcher()), **torch_calls()}
    ns = best_ns(timed, ROUNDS)
    floor = ns["wrapper w(*a, **k) (the floor)"]
    print(f"{'call':<52} {'ns':>8} {'x wrapper':>10}")
    for name, value in ns.items():
        print(f"{name:<52} {value:>8.0f} {value / floor:>10.2f}")
    print(f"\n{'registration (µs per op)':<52} {'alone':>8} {'+torch':>8}")
    with_torch: dict[str, float] = {}
    if "torch.library.custom_op f(x, y)" in ns:
        with_torch = best_us({**customop_registrations(Dispatcher()), **torch_registrations()})
    for name, value in alone.items():
        print(f"{name:<52} {value:>8.0f} {with_torch.get(name, float('nan')):>8.0f}")
    if with_torch:
        print(
            f"{'torch.library.custom_op':<52} {'':>8} {with_torch['torch.library.custom_op']:>8.0f}"
        )
    ratios = {name: ns[name] / floor for name in list(ns)[2:5]}
    custom_op, overload, packet = ratios.values()
    print(
        f"\ntargets: CustomOpDef {custom_op:.2f}x (<= 1.5x), OpOverload {overload:.2f}x "
        f"(<= 1.5x), packet {packet:.2f}x (<= 2.5x); registration "
        f"{alone['@custom_op, schema inferred']:.0f} µs (<= 100 µs)"
    )
    torch_op = ns.get("torch.library.custom_op f(x, y)")
    if torch_op is not None:
        print(
            f"vs torch.library.custom_op call: {torch_op / ns['CustomOpDef  f(x, y)']:.0f}x faster"
        )
        ratio = with_torch["torch.library.custom_op"] / with_torch["@custom_op, schema inferred"]
        print(f"vs torch.library.custom_op registration (same heap): {ratio:.1f}x faster")


if __name__ == "__main__":
    main()

"""Fake-mode calls and tracing: customop vs torch, in one run.

    python benchmarks/bench_fake.py

Targets (DESIGN §8): an op called under FakeTensorMode <= 1 µs per call;
tracing <= 20 µs per recorded op. With torch installed, the same run times a
torch custom op under torch's FakeTensorMode and make_fx.
"""

from __future__ import annotations

import time
import timeit
from typing import Any

import numpy as np

import customop
from customop import Dispatcher
from customop.tensor import install_backends

OPS = 1000  # per-trace setup is amortised over a long chain, as in a real model


def fake_call_ns(d: Dispatcher) -> float:
    @customop.custom_op("benchfake::f", mutates_args=(), dispatcher=d)
    def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x + y

    # A legal fake makes a new output (returning x would alias an input of a
    # functional op); torch's side below uses torch.empty_like likewise.
    f.register_fake(lambda x, y: customop.empty_like(x))
    with customop.FakeTensorMode() as mode:
        x = mode.from_real(np.zeros((8, 4), dtype=np.float32))
        best = min(timeit.repeat(lambda: f(x, x), number=100_000, repeat=7))
    return best / 100_000 * 1e9


def trace_us_per_op(d: Dispatcher) -> float:
    @customop.custom_op("benchfake::g", mutates_args=(), dispatcher=d)
    def g(x: np.ndarray) -> np.ndarray:
        return x * 2

    @g.register_fake
    def _(x: Any) -> Any:
        return customop.empty_like(x)

    def chain(x: Any) -> Any:
        for _ in range(OPS):
            x = g(x)
        return x

    x = np.zeros((8, 4), dtype=np.float32)
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        customop.trace(chain, x, dispatcher=d)
        runs.append((time.perf_counter() - start) / OPS * 1e6)
    return min(runs)


def torch_rows() -> list[tuple[str, float]]:
    try:
        import torch
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.proxy_tensor import make_fx
    except ImportError:
        return []

    def body(x: Any, y: Any) -> Any:
        return x + y

    op = torch.library.custom_op(
        "benchfaketorch::f", body, mutates_args=(), schema="(Tensor x, Tensor y) -> Tensor"
    )
    op.register_fake(lambda x, y: torch.empty_like(x))
    with FakeTensorMode() as mode:
        t = mode.from_tensor(torch.zeros(8, 4))
        fake_ns = min(timeit.repeat(lambda: op(t, t), number=2_000, repeat=5)) / 2_000 * 1e9

    def chain(x: Any) -> Any:
        for _ in range(OPS):
            x = op(x, x)
        return x

    start = time.perf_counter()
    make_fx(chain, tracing_mode="fake")(torch.zeros(8, 4))
    return [
        ("torch custom op under FakeTensorMode (ns/call)", fake_ns),
        ("torch make_fx (µs per recorded op)", (time.perf_counter() - start) / OPS * 1e6),
    ]


def main() -> None:
    d = Dispatcher()
    install_backends(d)
    call = fake_call_ns(d)
    per_op = trace_us_per_op(d)
    print(f"{'measurement':<48} {'value':>10}")
    print(f"{'customop op under FakeTensorMode (ns/call)':<48} {call:>10.0f}   target <= 1000")
    print(f"{'customop trace (µs per recorded op)':<48} {per_op:>10.1f}   target <= 20")
    for name, value in torch_rows():
        print(f"{name:<48} {value:>10.1f}")


if __name__ == "__main__":
    main()

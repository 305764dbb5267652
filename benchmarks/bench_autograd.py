"""Autograd overhead: customop's vjp vs torch autograd, on a 1,000-op chain, in one run.

    python benchmarks/bench_autograd.py

Each chain is ``OPS`` calls of a negation op on a tiny array, whose backward
is one call of the same op (``neg(g)``), so the kernels do next to nothing and
what is timed is the framework. Measured, best of several runs:

* customop: the op called plainly (the baseline), the forward recorded under
  ``vjp`` (recording overhead = that minus the baseline), and ``vjp_fn``
  (the backward; its overhead = that minus one plain call per op);
* torch: the same chain as a ``torch.autograd.Function`` (``torch.neg``
  inside) and as a ``torch.library.custom_op`` with ``register_autograd``
  whose backward calls the op again, forward with ``requires_grad`` and
  ``.backward()``, on tiny CPU tensors; overhead = that minus the plain
  ``torch.neg`` calls.

Target (DESIGN §8): customop's forward+backward overhead per op is at most
one third of torch custom_op's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

import customop
from customop import Dispatcher
from customop.autograd import vjp
from customop.tensor import install_backends

OPS = 1000
REPEAT = 7


def best_us_per_op(run: Callable[[], Any], repeat: int = REPEAT) -> float:
    """The fastest of ``repeat`` runs of ``run`` (a whole chain), in µs per op."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times) / OPS * 1e6


def customop_rows(d: Dispatcher) -> dict[str, float]:
    @customop.custom_op("benchad::neg", mutates_args=(), dispatcher=d)
    def neg(x: np.ndarray) -> np.ndarray:
        return np.negative(x)

    neg.register_autograd(lambda ctx, g: neg(g))
    x = np.ones(4, dtype=np.float32)

    def chain(x: Any) -> Any:
        for _ in range(OPS):
            x = neg(x)
        return x

    plain = best_us_per_op(lambda: chain(x))
    kernel = best_us_per_op(lambda: [np.negative(x) for _ in range(OPS)])
    forward = best_us_per_op(lambda: vjp(chain, x, dispatcher=d))
    backwards = []
    for _ in range(REPEAT):
        _, vjp_fn = vjp(chain, x, dispatcher=d)
        backwards.append(best_us_per_op(lambda f=vjp_fn: f(x), repeat=1))  # type: ignore[misc]
    backward = min(backwards)
    return {
        "kernel": kernel,
        "plain": plain,
        "forward": forward,
        "backward": backward,
        # Overhead: everything but the kernels (one forward and one backward kernel per op).
        "overhead": forward + backward - 2 * kernel,
    }


def torch_rows() -> dict[str, float]:
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(1)

    class Neg(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return torch.neg(x)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return torch.neg(g)

    def neg_body(x: Any) -> Any:
        return torch.neg(x)

    op = torch.library.custom_op(
        "benchadtorch::neg", neg_body, mutates_args=(), schema="(Tensor x) -> Tensor"
    )
    op.register_autograd(lambda ctx, g: op(g))

    def run(step: Callable[[Any], Any]) -> Callable[[], None]:
        def once() -> None:
            x = torch.ones(4, requires_grad=True)
            y = x
            for _ in range(OPS):
                y = step(y)
            y.backward(torch.ones(4))

        return once

    t = torch.ones(4)
    kernel = best_us_per_op(lambda: [torch.neg(t) for _ in range(OPS)])
    function = best_us_per_op(run(Neg.apply))
    custom = best_us_per_op(run(op))
    return {
        "kernel": kernel,
        "function": function,
        "custom_op": custom,
        "function overhead": function - 2 * kernel,
        "custom_op overhead": custom - 2 * kernel,
    }


def main() -> None:
    d = Dispatcher()
    install_backends(d)
    ours = customop_rows(d)
    theirs = torch_rows()
    print(f"{'measurement (µs per op, 1,000-op chain)':<56} {'value':>9}")
    rows = [
        ("customop plain call (no transform)", ours["plain"]),
        ("customop forward recorded under vjp", ours["forward"]),
        ("  recording overhead (minus the plain call)", ours["forward"] - ours["plain"]),
        ("customop backward (vjp_fn)", ours["backward"]),
        ("  backward overhead (minus one plain call)", ours["backward"] - ours["plain"]),
        ("customop forward+backward overhead (minus kernels)", ours["overhead"]),
    ]
    if theirs:
        rows += [
            ("torch.autograd.Function forward+backward", theirs["function"]),
            ("torch custom_op + register_autograd forward+backward", theirs["custom_op"]),
            ("torch custom_op forward+backward overhead", theirs["custom_op overhead"]),
        ]
    for name, value in rows:
        print(f"{name:<56} {value:>9.2f}")
    if theirs:
        ratio = ours["overhead"] / theirs["custom_op overhead"]
        print(
            f"ratio customop / torch custom_op overhead: {ratio:.3f}   target <= 0.333 "
            f"({'met' if ratio <= 1 / 3 else 'NOT met'})"
        )
        ratio_fn = ours["overhead"] / theirs["function overhead"]
        print(f"ratio customop / torch.autograd.Function overhead: {ratio_fn:.3f}")


if __name__ == "__main__":
    main()

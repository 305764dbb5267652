"""customop ops as JAX primitives (customop.jax) against the same code in plain JAX, in one run.

    python benchmarks/bench_jax.py

The op is a layer norm over the last dimension of a (64, 256) float32 array,
with its ``jax.numpy`` kernel registered for the ``"jax"`` device, a fake
impl and a backward formula. Rows, each a ratio measured in this run:

1. under ``jax.jit``, the HLO of a function calling the op against the HLO of
   the same function calling the kernel directly (after canonicalisation:
   the module name and source locations dropped), and their run times;
2. an eager call on JAX arrays against calling the ``jnp`` kernel eagerly
   (JAX dispatches each jnp op on its own) and against a ``jax.jit`` of the
   kernel (one compiled call, which customop's eager path is);
3. tracing cost per op under ``jax.jit`` (``jax.make_jaxpr`` of a chain of 50
   calls, per call; with ``lower:``, ``jax.jit(f).lower`` (trace and lower to
   HLO); with ``grad:``, of the function's gradient), customop's primitive
   against a hand-written ``jax.custom_vjp`` wrapper of the same kernel and
   backward, and against the bare kernel. customop's trace runs no kernel (the
   fake impl's shapes are cached per op, statics and avals); its lowering traces
   the kernel once per distinct call, where custom_vjp traces it per call.

4. what the backend adds to defining an op (one kernel registration per op).

Targets (issue #23 §3): the same HLO and a run time within noise (1.00x +-
the spread of rounds); eager at most 2x the eager jnp kernel.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see bench_dispatch.py

import re
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from _timing import Timed, best_ns

import customop
import customop.jax

ROUNDS = 30
CHAIN = 50
EPS = 1e-5


def kernel(x: Any, eps: float = EPS) -> Any:
    mean = x.mean(-1, keepdims=True)
    xc = x - mean
    return xc / jnp.sqrt((xc * xc).mean(-1, keepdims=True) + eps)


def kernel_backward(grad: Any, x: Any, eps: float = EPS) -> Any:
    xhat = kernel(x, eps)
    rstd = 1 / jnp.sqrt(((x - x.mean(-1, keepdims=True)) ** 2).mean(-1, keepdims=True) + eps)
    return rstd * (
        grad - grad.mean(-1, keepdims=True) - xhat * (grad * xhat).mean(-1, keepdims=True)
    )


@customop.custom_op("benchjax::norm", mutates_args=())
def norm(x: np.ndarray, eps: float = EPS) -> np.ndarray:
    return np.asarray(kernel(jnp.asarray(x), eps))


@customop.custom_op("benchjax::norm_backward", mutates_args=())
def norm_backward(grad: np.ndarray, x: np.ndarray, eps: float) -> np.ndarray:
    return np.asarray(kernel_backward(jnp.asarray(grad), jnp.asarray(x), eps))


norm.register_kernel("jax", kernel)
norm_backward.register_kernel("jax", kernel_backward)
norm.register_fake(lambda x, eps=EPS: customop.empty_like(x))
norm_backward.register_fake(lambda grad, x, eps: customop.empty_like(x))
norm.register_autograd(
    lambda ctx, grad: (norm_backward(grad, ctx.x, ctx.eps), None),
    setup_context=lambda ctx, inputs, output: ctx.__dict__.update(x=inputs[0], eps=inputs[1]),
)


@jax.custom_vjp
def by_hand(x: Any) -> Any:
    return kernel(x)


by_hand.defvjp(lambda x: (kernel(x), x), lambda x, grad: (kernel_backward(grad, x),))


def canonical(text: str) -> str:
    """HLO text without what names the function or points at its source."""
    text = re.sub(r"module @\S+", "module", text)
    text = re.sub(r"loc\([^)]*\)", "", text)
    return "\n".join(line.rstrip() for line in text.splitlines() if not line.startswith("#loc"))


def hlo_rows(x: Any) -> None:
    through_op = canonical(jax.jit(lambda x: norm(x) * 2).lower(x).as_text())
    direct = canonical(jax.jit(lambda x: kernel(x) * 2).lower(x).as_text())
    print(
        f"1. HLO under jax.jit, op vs kernel: {'identical' if through_op == direct else 'DIFFER'}"
    )
    ops = jax.jit(lambda x: norm(x) * 2)
    bare = jax.jit(lambda x: kernel(x) * 2)
    timed: Timed = {
        "jit(op)": (lambda: ops(x).block_until_ready(), 200),
        "jit(kernel)": (lambda: bare(x).block_until_ready(), 200),
    }
    _report(timed, "jit(kernel)")


def eager_rows(x: Any) -> None:
    print("2. eager call on JAX arrays")
    compiled = jax.jit(kernel)
    norm(x).block_until_ready()
    compiled(x).block_until_ready()
    timed: Timed = {
        "customop op, eager": (lambda: norm(x).block_until_ready(), 100),
        "jnp kernel, eager (op by op)": (lambda: kernel(x).block_until_ready(), 100),
        "jax.jit(kernel), eager call": (lambda: compiled(x).block_until_ready(), 100),
    }
    _report(timed, "jnp kernel, eager (op by op)")


def _chain(step: Any) -> Any:
    def f(x: Any) -> Any:
        for _ in range(CHAIN):
            x = step(x)
        return x

    return f


def _fresh(name: str) -> Any:
    """A new function for row ``name``: JAX caches traces per function object."""
    kind = name.rsplit(": ", maxsplit=1)[-1]
    step = {"customop primitive": norm, "hand-written jax.custom_vjp": by_hand}.get(kind, kernel)
    f = _chain(step)
    return f if not name.startswith("grad") else jax.grad(lambda x: f(x).sum())


def _trace(name: str, f: Any, x: Any) -> None:
    """make_jaxpr; for "lower:" rows, jax.jit(f).lower(x): tracing plus lowering to HLO."""
    if name.startswith("lower"):
        jax.jit(f).lower(x)
    else:
        jax.make_jaxpr(f)(x)


TRACE_ROWS = (
    "lower: customop primitive",
    "lower: hand-written jax.custom_vjp",
    "lower: bare jnp kernel (no custom rule)",
    "customop primitive",
    "hand-written jax.custom_vjp",
    "bare jnp kernel (no custom rule)",
    "grad: customop primitive",
    "grad: hand-written jax.custom_vjp",
    "grad: bare jnp kernel (no custom rule)",
)


def trace_rows(x: Any) -> None:
    print(f"3. tracing under jax.jit, per op ({CHAIN} chained calls, best of 7)")
    best = dict.fromkeys(TRACE_ROWS, float("inf"))
    for name in TRACE_ROWS:
        _trace(name, _fresh(name), x)  # warm: imports, customop's abstract-eval cache
    for _ in range(7):  # rounds of every row, as _timing does
        for name in TRACE_ROWS:
            f = _fresh(name)
            start = time.perf_counter()
            _trace(name, f, x)
            best[name] = min(best[name], (time.perf_counter() - start) / CHAIN * 1e6)
    for name, us in best.items():
        floor = name.split(": ")[0] + ": " if ": " in name else ""
        floor += "hand-written jax.custom_vjp"
        print(f"   {name:<44} {us:8.1f} µs   {us / best[floor]:5.2f}x custom_vjp")


_defined = iter(range(10**9))


def _define_ops(with_backend: bool, count: int = 100) -> float:
    """µs per ``@custom_op`` in a fresh dispatcher, with or without the JAX backend."""
    d = customop.Dispatcher()
    customop.tensor.install_backends(d)
    if with_backend:
        customop.jax.install(d)
    start = time.perf_counter()
    for _ in range(count):

        @customop.custom_op(f"benchjax::op{next(_defined)}", mutates_args=(), dispatcher=d)
        def f(x: np.ndarray) -> np.ndarray:
            return x

    return (time.perf_counter() - start) / count * 1e6


def registration_rows() -> None:
    print("4. @custom_op registration (each op gets its AutogradJax kernel), best of 15 rounds")
    best = {False: float("inf"), True: float("inf")}
    for _ in range(15):
        for with_backend, so_far in best.items():
            best[with_backend] = min(so_far, _define_ops(with_backend))
    print(f"   {'without the JAX backend':<44} {best[False]:8.1f} µs   1.00x")
    print(
        f"   {'with the JAX backend':<44} {best[True]:8.1f} µs   {best[True] / best[False]:5.2f}x"
    )


def _report(timed: Timed, floor: str) -> None:
    figures = best_ns(timed, ROUNDS)
    for name, ns in figures.items():
        print(f"   {name:<44} {ns / 1000:8.1f} µs   {ns / figures[floor]:5.2f}x")


def main() -> None:
    x = jnp.asarray(np.random.default_rng(0).standard_normal((64, 256)), jnp.float32)
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}; layer norm of {tuple(x.shape)}")
    hlo_rows(x)
    eager_rows(x)
    trace_rows(x)
    registration_rows()


if __name__ == "__main__":
    main()

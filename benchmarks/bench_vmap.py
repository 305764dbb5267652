"""vmap: a rule against the kernel on the whole batch, the loop fallback, and torch.func.vmap.

    python benchmarks/bench_vmap.py

All figures come from one run, as ratios (see ``_timing``):

* customop.vmap over an elementwise op with a rule (``sin``, whose rule
  calls the op on the batch), batch 64, against calling the kernel
  (``np.sin``) once on the whole batch. Target (issue #24): <= 1.5x at the
  per-example size below; the overhead is a constant per call, so the
  ratio is printed for a smaller size too;
* the loop fallback (the same op without a rule: 64 calls and a stack)
  against the rule, so users see why a rule matters;
* torch.func.vmap over the op registered in torch (``customop.torch.register``,
  its rule handed to ``torch.library.register_vmap``) against the same rule
  on a ``torch.library.custom_op`` with ``register_vmap``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import customop
from customop import Dispatcher, VmapFallbackWarning
from customop.tensor import install_backends

try:  # run as a script from the repository root, or as a module
    from benchmarks._timing import Timed, best_ns
except ImportError:  # pragma: no cover - depends on how it is run
    from _timing import Timed, best_ns  # type: ignore[import-not-found,no-redef]

BATCH = 64
SIZES = (1024, 128)  # per-example sizes: the target's, then a small one
ROUNDS = 15
TARGET = 1.5


def _numpy_ops(d: Dispatcher) -> tuple[Any, Any]:
    @customop.custom_op("benchvmap::sin", mutates_args=(), dispatcher=d)
    def sin(x: np.ndarray) -> np.ndarray:
        return np.sin(x)

    sin.register_vmap(lambda info, in_dims, x: (sin(x), in_dims[0]))

    @customop.custom_op("benchvmap::sin_no_rule", mutates_args=(), dispatcher=d)
    def sin_no_rule(x: np.ndarray) -> np.ndarray:
        return np.sin(x)

    return sin, sin_no_rule


def numpy_rows(d: Dispatcher) -> list[tuple[str, float, float | None]]:
    sin, sin_no_rule = _numpy_ops(d)
    with_rule = customop.vmap(sin, dispatcher=d)
    looped = customop.vmap(sin_no_rule, dispatcher=d)
    rows: list[tuple[str, float, float | None]] = []
    for size in SIZES:
        x = np.random.default_rng(0).standard_normal((BATCH, size))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", VmapFallbackWarning)
            looped(x)  # warned once: not timed
        timed: Timed = {
            "kernel": (lambda x=x: np.sin(x), 200),
            "op": (lambda x=x: sin(x), 200),
            "vmap": (lambda x=x: with_rule(x), 200),
            "loop": (lambda x=x: looped(x), 10),
        }
        ns = best_ns(timed, ROUNDS)
        shape = f"({BATCH}, {size})"
        rows += [
            (f"np.sin on the whole batch {shape}", ns["kernel"], None),
            ("  the op on the whole batch", ns["op"], ns["op"] / ns["kernel"]),
            ("  customop.vmap(op) (rule), / kernel", ns["vmap"], ns["vmap"] / ns["kernel"]),
            ("  customop.vmap(op) (loop fallback), / rule", ns["loop"], ns["loop"] / ns["vmap"]),
        ]
    return rows


def torch_rows() -> list[tuple[str, float, float | None]]:
    try:
        import torch
    except ImportError:
        return []
    import customop.torch

    torch.set_num_threads(1)

    schema = "(Tensor x) -> Tensor"  # torch is local here: annotations would not resolve

    def body(x: Any) -> Any:
        return torch.sin(x)

    def fake(x: Any) -> Any:
        return torch.empty_like(x)

    sin = customop.custom_op("benchvmap_t::sin", body, mutates_args=(), schema=schema)

    sin.register_fake(fake)
    sin.register_vmap(lambda info, in_dims, x: (sin(x), in_dims[0]))
    handle = customop.torch.register(sin)

    torch_sin = torch.library.custom_op(
        "benchvmap_torch::sin", body, mutates_args=(), schema=schema
    )

    torch_sin.register_fake(fake)
    torch_sin.register_vmap(lambda info, in_dims, x: (torch_sin(x), in_dims[0]))
    x = torch.randn(BATCH, SIZES[0])
    ours, theirs = torch.func.vmap(sin), torch.func.vmap(torch_sin)
    timed: Timed = {
        "kernel": (lambda: torch.sin(x), 200),
        "ours": (lambda: ours(x), 100),
        "theirs": (lambda: theirs(x), 100),
    }
    ns = best_ns(timed, ROUNDS)
    handle.remove()
    return [
        (f"torch.sin on the whole batch ({BATCH}, {SIZES[0]})", ns["kernel"], None),
        ("  torch.func.vmap, torch custom_op + register_vmap", ns["theirs"], None),
        ("  torch.func.vmap, customop op (rule bridged), / torch's", ns["ours"],
         ns["ours"] / ns["theirs"]),
    ]  # fmt: skip


def main() -> None:
    d = Dispatcher()
    install_backends(d)
    rows = numpy_rows(d) + torch_rows()
    print(f"{'measurement':<58} {'µs':>9} {'ratio':>8}")
    for name, ns, ratio in rows:
        shown = "" if ratio is None else f"{ratio:8.2f}"
        print(f"{name:<58} {ns / 1000:>9.2f} {shown:>8}")
    target = next(r for name, _, r in rows if name.startswith("  customop.vmap(op) (rule)"))
    assert target is not None
    verdict = "met" if target <= TARGET else "NOT met"
    print(f"vmap with a rule / kernel at ({BATCH}, {SIZES[0]}): {target:.2f}   "
          f"target <= {TARGET} ({verdict})")  # fmt: skip


if __name__ == "__main__":
    main()

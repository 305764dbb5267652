"""Schema parsing speed: customop vs torch's C++ parser and torchgen, in one run.

    python benchmarks/bench_schema.py

Prints µs per schema over torch 2.13's 4,436 schemas (tests/data). "cold"
clears customop's intern tables before every pass, so it counts every
type, default and argument the first time it is seen; "warm" is the steady
state of a process that keeps parsing. With torch installed, the same run
times ``torch._C.parse_schema`` on the same lines and torchgen's
``FunctionSchema.parse`` on the native_functions.yaml funcs, and prints the
ratios. Targets (DESIGN §8): >= 3x faster than torchgen; within 4x of C++;
``import customop`` <= 250 ms.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

DATA = Path(__file__).parent.parent / "tests" / "data"
LINES = (DATA / "schemas_torch_2_13.txt").read_text().splitlines()
NATIVE = [
    row.split("\t")[0]
    for row in (DATA / "native_functions_canonical.tsv").read_text().splitlines()[1:]
]


def per_item_us(
    parse: Callable[[str], object],
    items: Sequence[str],
    repeat: int = 5,
    before: Callable[[], None] | None = None,
) -> float:
    """Median over ``repeat`` passes of the mean µs per item."""
    samples = []
    for _ in range(repeat):
        if before is not None:
            before()
        start = time.perf_counter()
        for item in items:
            parse(item)
        samples.append((time.perf_counter() - start) / len(items) * 1e6)
    return statistics.median(samples)


def import_ms() -> float:
    code = "import time; t = time.perf_counter(); import customop; print(time.perf_counter() - t)"
    runs = [float(subprocess.check_output([sys.executable, "-c", code])) * 1000 for _ in range(5)]
    return statistics.median(runs)


def main() -> None:
    from customop.schema import parse_schema
    from customop.schema._fastpath import clear_caches

    def lenient(text: str) -> object:
        return parse_schema(text, strict=False)

    rows = [
        ("customop parse_schema, cold", per_item_us(lenient, LINES, before=clear_caches)),
        ("customop parse_schema, warm", per_item_us(lenient, LINES)),
    ]
    native = ["aten::" + func for func in NATIVE]
    ours_native = per_item_us(parse_schema, native, before=clear_caches)
    rows.append(("customop on native funcs, cold", ours_native))
    try:
        import torch
        from torchgen.model import FunctionSchema as TorchgenSchema
    except ImportError:
        torch = None
    if torch is not None:
        cpp = per_item_us(torch._C.parse_schema, LINES)
        torchgen = per_item_us(TorchgenSchema.parse, NATIVE, repeat=3)
        rows += [("torch._C.parse_schema (C++)", cpp), ("torchgen FunctionSchema.parse", torchgen)]
    print(f"{'parser':<34} {'µs/schema':>10}")
    for name, value in rows:
        print(f"{name:<34} {value:>10.2f}")
    if torch is not None:
        cold, warm = rows[0][1], rows[1][1]
        speedup = torchgen / ours_native
        print(f"\nvs torchgen (native funcs, cold): {speedup:.1f}x faster (target >= 3x)")
        print(f"vs torch C++ (cold): {cold / cpp:.2f}x the time (target <= 4x)")
        print(f"vs torch C++ (warm): {warm / cpp:.2f}x the time")
    else:
        print("\n(torch not installed: pip install torch==2.13.0 for the ratios)")
    print(f"\nimport customop: {import_ms():.0f} ms (target <= 250 ms)")


if __name__ == "__main__":
    main()

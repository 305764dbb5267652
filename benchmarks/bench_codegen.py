"""Codegen speed: ``customop gen`` on PyTorch's native_functions.yaml (2,584 entries).

    python benchmarks/bench_codegen.py

Prints the time to generate the registration module and the typed stub of
the whole file (DESIGN §8 target: < 2 s), split into its phases, in process
(cold: the first run, which also builds the pydantic validators; warm: the
median of later runs) and as a fresh ``python -m customop gen`` process,
interpreter start and imports included. With torch installed, it also times
torchgen's own ``parse_native_yaml`` on the same file for scale.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

DATA = Path(__file__).parent.parent / "tests" / "data"
NATIVE = DATA / "native_functions.yaml"
TAGS = DATA / "tags.yaml"


def seconds(run: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    from customop.codegen import (
        GenOptions,
        generate,
        load_declarations,
        render_registration,
        render_stubs,
    )

    options = GenOptions(tags_file=TAGS)
    with tempfile.TemporaryDirectory() as out:
        cold, *warm = seconds(lambda: generate(NATIVE, out, options), repeat=6)
        declarations = load_declarations(NATIVE, options)
        phases = [
            ("load + validate", seconds(lambda: load_declarations(NATIVE, options), 5)),
            ("render module", seconds(lambda: render_registration(declarations, "n"), 5)),
            ("render stub", seconds(lambda: render_stubs(declarations, "n"), 5)),
        ]
        command = [sys.executable, "-m", "customop", "gen", str(NATIVE), "--out", out, "--quiet"]
        process = seconds(lambda: subprocess.run(command, check=True, capture_output=True), 3)
    print(f"native_functions.yaml: {len(declarations.declarations)} entries")
    print(f"{'phase':<34} {'seconds':>8}")
    for name, samples in phases:
        print(f"{name:<34} {statistics.median(samples):>8.3f}")
    print(f"{'generate(), cold (first run)':<34} {cold:>8.3f}")
    print(f"{'generate(), warm (median)':<34} {statistics.median(warm):>8.3f}")
    print(f"{'python -m customop gen (process)':<34} {statistics.median(process):>8.3f}")
    print("target: < 2 s")
    try:
        from torchgen.gen import parse_native_yaml
    except ImportError:
        print("\n(torch not installed: pip install torch==2.13.0 to time torchgen as well)")
        return
    torchgen = seconds(lambda: parse_native_yaml(str(NATIVE), str(TAGS)), 1)
    print(f"\ntorchgen parse_native_yaml (parse only, for scale): {torchgen[0]:.3f} s")


if __name__ == "__main__":
    main()

"""Codegen end to end: generate examples/ops.yaml, import it, call the ops, type-check a caller.

    python examples/codegen_caller.py

# requires: yaml, mypy

Writes the registration module and typed stub into a temporary package,
calls the generated ops on numpy arrays, then runs mypy on a small caller:
mypy accepts the good call and flags the wrong one.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CALLER = """
import numpy as np
from mylib_generated import mylib

x = np.ones(3)
good = mylib.scale(x, 3.0)
bad = mylib.scale(x, "three")  # mypy: argument 2 has an incompatible type
"""


def main() -> None:
    out = Path(tempfile.mkdtemp())
    subprocess.run(
        [sys.executable, "-m", "customop", "gen", str(ROOT / "examples" / "ops.yaml"),
         "--out", str(out), "--name", "mylib_generated", "--quiet"],
        check=True, cwd=ROOT,
    )  # fmt: skip
    print("generated:", sorted(p.name for p in out.iterdir() if p.suffix in (".py", ".pyi")))
    sys.path[:0] = [str(out), str(ROOT)]
    from mylib_generated import mylib  # type: ignore[import-not-found]  # noqa: PLC0415 - exists only now

    x = np.arange(3.0)
    print("mylib.add(x, x, alpha=2) =", mylib.add(x, x, alpha=2).tolist())
    print("mylib.scale(x) =", mylib.scale(x).tolist())
    caller = out / "caller.py"
    caller.write_text(textwrap.dedent(CALLER))
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "caller.py"],
        capture_output=True, text=True, cwd=out, check=False,
    )  # fmt: skip
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    print("mypy flags:", [line.split(": error: ")[1] for line in errors])
    if len(errors) != 1 or ":7:" not in errors[0]:
        raise SystemExit(f"expected exactly the wrong call (line 7) flagged, got {errors}")


if __name__ == "__main__":
    main()

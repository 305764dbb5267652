"""examples/user_backend.py runs as a user would run it, and prints what happened."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent.parent

EXPECTED = """\
device of x: toy
scale on numpy: [10. 20.]
scale on toy:   LoggedArray([10.0, 20.0, 30.0])
add on toy:     LoggedArray([2.0, 4.0, 6.0])
empty_like(x):  LoggedArray
fake on cpu:    FakeTensor(shape=(s0, 3), dtype=float32, device=cpu)
fake on cuda:1: FakeTensor(shape=(s0, 3), dtype=float32, device=cuda:1)
fake on toy:    FakeTensor(shape=(s0, 3), dtype=float32, device=toy)
log:
  toy kernel: scale by 10.0
  toy fallback: toy_demo::add runs its CPU kernel
"""


def test_user_backend_example() -> None:
    done = subprocess.run(
        [sys.executable, "examples/user_backend.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == EXPECTED

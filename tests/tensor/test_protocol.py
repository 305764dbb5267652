"""mypy sees FakeTensor and numpy arrays as `customop.Tensor`, and SymInt arithmetic typed.

The case below is type-checked for real with ``mypy --strict``; the only error
must be the one marked.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from customop.tensor import FakeTensor, Tensor

ROOT = Path(__file__).parent.parent.parent

CASE = textwrap.dedent(
    """\
    from typing import assert_type

    import numpy as np

    from customop.tensor import Device, FakeTensor, ShapeEnv, SymBool, SymInt, Tensor, dtype

    def rank(x: Tensor) -> int:
        return x.ndim

    fake = FakeTensor((2, 3))
    rank(fake)
    rank(np.zeros(2))
    rank(3)  # error
    s0 = ShapeEnv().new_symint()
    assert_type(s0 * 2 + 1, int | SymInt)
    assert_type(s0 >= 0, bool | SymBool)
    assert_type(fake.size(0), int | SymInt)
    assert_type(fake.size(), tuple[int | SymInt, ...])
    assert_type(fake.numel(), int | SymInt)
    assert_type(fake.dtype, dtype)
    assert_type(fake.device, Device)
    """
)


def test_runtime_protocol() -> None:
    assert isinstance(FakeTensor((2,)), Tensor)
    assert isinstance(np.zeros(2), Tensor)


def test_mypy_accepts_fakes_and_arrays_as_tensors(tmp_path: Path) -> None:
    case = tmp_path / "protocol_case.py"
    case.write_text(CASE)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--hide-error-context",
         "--show-error-codes", "--no-incremental", str(case)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    errors = [line.split(": error: ")[0].rsplit(":", 1)[-1] for line in done.stdout.splitlines()]
    error_line = CASE.splitlines().index("rank(3)  # error") + 1
    assert errors == [str(error_line)], done.stdout
    assert "[arg-type]" in done.stdout

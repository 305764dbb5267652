"""``customop dump --library PATH``: what a compiled library registers.

Run in a child process: the command loads the library into the process-wide
dispatcher for good, as a command line does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent.parent


def _dump(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "customop", "dump", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)


def test_dump_lists_the_librarys_ops(kernels_so: Path) -> None:
    done = _dump("--library", str(kernels_so))
    assert done.returncode == 0, done.stderr
    assert "cpptest::add(Tensor a, Tensor b) -> Tensor\n    kernels: CPU" in done.stdout
    assert "cpptest::mul(Tensor _0, Tensor _1) -> Tensor _0" in done.stdout


def test_dump_of_one_op_shows_the_cpp_sources(kernels_so: Path) -> None:
    done = _dump("--library", str(kernels_so), "--op", "cpptest::add")
    assert done.returncode == 0, done.stderr
    assert "CPU: cpp_kernel[cpptest::add] at " in done.stdout
    assert "kernels.cpp:" in done.stdout


def test_dump_of_a_file_that_is_not_a_library(tmp_path: Path) -> None:
    path = tmp_path / "text.so"
    path.write_text("not a library")
    done = _dump("--library", str(path))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "cannot open text.so" in done.stderr

"""Shared helpers of the codegen tests: paths, YAML files in tmp_path, running mypy."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent.parent
HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
EXAMPLE = ROOT / "examples" / "ops.yaml"
TRICKY = HERE / "data" / "tricky.yaml"
NATIVE = ROOT / "tests" / "data" / "native_functions.yaml"
TAGS = ROOT / "tests" / "data" / "tags.yaml"


@pytest.fixture
def yaml_file(tmp_path: Path) -> Callable[[str], Path]:
    """Write (dedented) YAML text to ``tmp_path/ops.yaml`` and return its path."""

    def write(text: str, name: str = "ops.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path

    return write


def run_mypy(cwd: Path, *files: str) -> list[str]:
    """``mypy --strict`` on ``files`` in ``cwd``; the error lines it prints."""
    command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--no-error-summary"]
    command += ["--cache-dir", str(cwd / ".mypy_cache"), *files]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    return [line for line in done.stdout.splitlines() if ": error: " in line]

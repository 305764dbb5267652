"""Packaging: the documented wheel of kernels builds and imports without a compiler, and
customop's own wheel ships the C++ headers. Slow: each runs pip and a build."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent.parent
DOC = ROOT / "docs" / "cpp.md"
pytestmark = pytest.mark.slow


def _doc_block(first_line: str) -> str:
    """The code block of docs/cpp.md that starts with ``first_line``."""
    blocks = re.findall(r"```[^\n]*\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    return next(block for block in blocks if block.startswith(first_line))


def _pip(*args: str, cwd: Path, env: dict[str, str] | None = None) -> None:
    command = [sys.executable, "-m", "pip", *args, "--no-deps", "--no-index", "-q"]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CXX", "CC", "PYTHONPATH")}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def _has_bdist_wheel() -> bool:
    # find_spec of a submodule imports its parent, which raises when setuptools is absent.
    if importlib.util.find_spec("setuptools") is None:
        return False
    return importlib.util.find_spec("setuptools.command.bdist_wheel") is not None


@pytest.mark.skipif(
    not _has_bdist_wheel(),
    reason="needs setuptools >= 70.1 (it builds wheels itself)",
)
def test_the_documented_wheel_of_kernels_imports_without_a_compiler(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "mykernels").mkdir()
    (project / "pyproject.toml").write_text(_doc_block("# pyproject.toml"))
    (project / "setup.py").write_text(_doc_block("# setup.py"))
    (project / "mykernels" / "__init__.py").write_text(_doc_block("# mykernels/__init__.py"))
    (project / "src" / "kernels.cpp").write_text(_doc_block("// kernels.cpp"))
    wheels = tmp_path / "wheels"
    _pip("wheel", ".", "--no-build-isolation", "-w", str(wheels), cwd=project, env=_env())
    (wheel,) = wheels.glob("mykernels-0.1.0-*.whl")
    target = tmp_path / "site"
    _pip("install", "--target", str(target), str(wheel), cwd=tmp_path)

    empty_bin = tmp_path / "bin"  # PATH with no compiler at all
    empty_bin.mkdir()
    code = (
        "import shutil, numpy as np, customop, mykernels\n"
        "assert not any(shutil.which(c) for c in ('c++', 'g++', 'cc', 'clang++'))\n"
        "x = np.arange(4, dtype=np.float32)\n"
        "print(customop.ops.mylib.add(x, x).tolist(), mykernels.__file__)\n"
    )
    env = _env(PATH=str(empty_bin), PYTHONPATH=os.pathsep.join([str(target), str(ROOT)]))
    command = [sys.executable, "-c", code]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    values, where = done.stdout.rsplit(" ", 1)
    assert values == "[0.0, 2.0, 4.0, 6.0]"
    assert Path(where.strip()).is_relative_to(target)


@pytest.mark.skipif(importlib.util.find_spec("hatchling") is None, reason="needs hatchling")
def test_customops_wheel_ships_the_headers(tmp_path: Path) -> None:
    _pip("wheel", ".", "--no-build-isolation", "-w", str(tmp_path), cwd=ROOT)
    (wheel,) = tmp_path.glob("customop-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    headers = sorted((ROOT / "customop" / "cpp" / "include").rglob("*.h"))
    assert headers
    for header in headers:
        assert header.relative_to(ROOT).as_posix() in names

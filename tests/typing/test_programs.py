"""``mypy --strict`` accepts the docs' own examples and one program per backend, which run.

The docs' examples are extracted as `tests/test_docs.py` runs them: each
page's ``python`` blocks in order, as one module (blocks fenced ``no-run``
are left out, and torch blocks where torch is missing). mypy checks every
page and every ``programs/*.py`` in one run (conftest.py, shared with the case
files of test_mypy.py); each file is a test case that fails with the errors
mypy reported in it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_docs import PAGES, ROOT, python_blocks
from tests.typing.conftest import HAS_TORCH, PROGRAMS, missing_requirements, page_module

#: The pages with python examples (the API reference pages have none).
DOC_PAGES = [page for page in PAGES if python_blocks(page, with_torch=True)]


def _errors(mypy_output: str, name: str) -> list[str]:
    return [
        line for line in mypy_output.splitlines()
        if ": error:" in line and Path(line.split(":", 1)[0]).name == name
    ]  # fmt: skip


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_examples_pass_mypy_strict(mypy_output: str, page: Path) -> None:
    if not python_blocks(page, with_torch=HAS_TORCH):
        pytest.skip(f"{page.name}: every example needs torch, which is not installed")
    errors = _errors(mypy_output, page_module(page))
    assert errors == [], "\n".join(errors)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_program_passes_mypy_strict_and_runs(mypy_output: str, program: Path) -> None:
    missing = missing_requirements(program)
    if missing:
        pytest.skip(f"{program.name} needs {', '.join(missing)}")
    errors = _errors(mypy_output, program.name)
    assert errors == [], "\n".join(errors)
    done = subprocess.run(
        [sys.executable, str(program)], capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout, f"{program.name} printed nothing"

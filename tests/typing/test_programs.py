"""``mypy --strict`` accepts the docs' own examples and one program per backend, which run.

The docs' examples are extracted as `tests/test_docs.py` runs them: each
page's ``python`` blocks in order, as one module (blocks fenced ``no-run``
are left out, and torch blocks where torch is missing). mypy checks every
page and every ``programs/*.py`` in one run; each file is a test case that
fails with the errors mypy reported in it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_docs import PAGES, ROOT, python_blocks

PROGRAMS = sorted((Path(__file__).parent / "programs").glob("*.py"))
REQUIRES = re.compile(r"^#\s*requires:\s*(\w+)", re.MULTILINE)
HAS_TORCH = importlib.util.find_spec("torch") is not None
#: The pages with python examples (the API reference pages have none).
DOC_PAGES = [page for page in PAGES if python_blocks(page, with_torch=True)]


def _module_name(page: Path) -> str:
    return "docs_" + re.sub(r"\W", "_", str(page.relative_to(ROOT).with_suffix("")))


def _needs_missing(path: Path) -> bool:
    names = REQUIRES.findall(path.read_text())
    return any(importlib.util.find_spec(name) is None for name in names)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """mypy's error lines per checked file name, from one ``mypy --strict`` run."""
    out = tmp_path_factory.mktemp("typed_docs")
    files = []
    for page in PAGES:
        code = "\n".join(code for _, code in python_blocks(page, with_torch=HAS_TORCH))
        if code:
            files.append(out / f"{_module_name(page)}.py")
            files[-1].write_text(code)
    files += [path for path in PROGRAMS if not _needs_missing(path)]
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--show-error-codes",
         "--no-incremental", "--cache-dir", str(out / ".mypy_cache"), *map(str, files)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    found: dict[str, list[str]] = {path.name: [] for path in files}
    for line in done.stdout.splitlines():
        name = Path(line.split(":", 1)[0]).name
        if ": error:" in line and name in found:
            found[name].append(line)
    assert done.returncode in (0, 1) and not done.stderr, done.stderr
    return found


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_examples_pass_mypy_strict(reports: dict[str, list[str]], page: Path) -> None:
    name = f"{_module_name(page)}.py"
    if name not in reports:
        pytest.skip(f"{page.name}: every example needs torch, which is not installed")
    assert reports[name] == [], "\n".join(reports[name])


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_program_passes_mypy_strict_and_runs(reports: dict[str, list[str]], program: Path) -> None:
    if _needs_missing(program):
        pytest.skip(f"{program.name} needs {', '.join(REQUIRES.findall(program.read_text()))}")
    assert reports[program.name] == [], "\n".join(reports[program.name])
    done = subprocess.run(
        [sys.executable, str(program)], capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout, f"{program.name} printed nothing"

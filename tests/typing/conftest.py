"""One ``mypy --strict`` run over everything tests/typing checks, shared by its tests.

The case files (``*_cases.py``, test_mypy.py), the programs (``programs/*.py``)
and the docs' examples (extracted per page, test_programs.py) are checked in
one run: each run of mypy parses numpy's stubs (and torch's) again, which
costs more than the files themselves.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_docs import PAGES, ROOT, python_blocks

HERE = Path(__file__).parent
CASES = sorted(HERE.glob("*_cases.py"))
PROGRAMS = sorted((HERE / "programs").glob("*.py"))
REQUIRES = re.compile(r"^#\s*requires:\s*(\w+)", re.MULTILINE)
HAS_TORCH = importlib.util.find_spec("torch") is not None


def page_module(page: Path) -> str:
    """The file name a docs page's examples are checked under."""
    return "docs_" + re.sub(r"\W", "_", str(page.relative_to(ROOT).with_suffix(""))) + ".py"


def missing_requirements(path: Path) -> list[str]:
    """The packages a ``# requires: name`` line of ``path`` names that are not installed."""
    names = REQUIRES.findall(path.read_text())
    return [name for name in names if importlib.util.find_spec(name) is None]


@pytest.fixture(scope="session")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> str:
    """mypy's report (one line per error or note) on every file tests/typing checks."""
    out = tmp_path_factory.mktemp("typed_docs")
    files = [*CASES, *(path for path in PROGRAMS if not missing_requirements(path))]
    for page in PAGES:
        code = "\n".join(code for _, code in python_blocks(page, with_torch=HAS_TORCH))
        if code:
            files.append(out / page_module(page))
            files[-1].write_text(code)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--hide-error-context",
         "--show-error-codes", "--no-incremental", "--cache-dir", str(out / ".mypy_cache"),
         *map(str, files)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1) and not done.stderr, done.stderr
    return done.stdout

"""Every Python block in docs/ and README.md runs, and its output is checked.

A ```python block is run in a namespace shared by the blocks of its page. If
the next block is a ```text block, it is the expected stdout of that python
block. Blocks fenced as ```python title="..." or ```pycon are treated alike;
blocks fenced as ```{.python .no-run} are shown highlighted but not run (shell
or pseudo code only). That attribute-list form is the one the Markdown engine
(pymdownx.superfences) renders; a bare ```python no-run is not a fence to it.
Blocks titled ```python title="requires torch" (or "requires jax", any
package) are skipped where that package is not installed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import linecache
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PAGES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md", ROOT / "README.pypi.md"]
REQUIRES = re.compile(r'title="requires (\w+)"')
FENCE = re.compile(r"^```(?:\{\.)?(\w+)([^\n]*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def _blocks(page: Path) -> list[tuple[str, str, str]]:
    return [(m.group(1), m.group(2), m.group(3)) for m in FENCE.finditer(page.read_text())]


def installed(package: str) -> bool:
    """Whether ``package`` can be imported here."""
    return importlib.util.find_spec(package) is not None


def python_blocks(page: Path, *, with_torch: bool) -> list[tuple[int, str]]:
    """(index, code) of each python block of ``page`` that runs, in order.

    Blocks fenced ``no-run`` are left out, and so are examples of a package
    that is not installed (``title="requires jax"``); torch examples
    (``title="requires torch"``, docs/torch.md) are kept only ``with_torch``.
    tests/typing/test_programs.py type-checks the same blocks.
    """
    return [
        (index, code)
        for index, (language, options, code) in enumerate(_blocks(page))
        if language == "python" and "no-run" not in options and _runs(options, with_torch)
    ]


def _runs(options: str, with_torch: bool) -> bool:
    required = REQUIRES.search(options)
    if required is None:
        return True
    if required.group(1) == "torch":
        return with_torch
    return installed(required.group(1))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run(page: Path) -> None:
    blocks = _blocks(page)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for index, code in python_blocks(page, with_torch=installed("torch")):
        out = io.StringIO()
        filename = f"{page.name}[block {index}]"
        # Tracebacks (and, on Python 3.10, registration sources) read the block's lines.
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        with contextlib.redirect_stdout(out):
            exec(compile(code, filename, "exec"), namespace)
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        if following is not None and following[0] == "text":
            assert out.getvalue() == following[2], f"{page.name} block {index}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_fences_are_ones_the_markdown_engine_renders(page: Path) -> None:
    # A python fence followed by a bare word (no-run) is not a fence to
    # pymdownx.superfences: the rest of the page alternates code and prose.
    # Options must be key="value" pairs or the {.lang .class} form.
    bad = re.findall(r"^```\w+[ \t]+[\w-]+[ \t]*$", page.read_text(), re.MULTILINE)
    assert not bad, f"{page.name}: fences that do not render: {bad}; write ```{{.python .no-run}}"


@pytest.mark.slow  # starts two xdist workers: 5-10 s
def test_contributing_parallel_command_runs() -> None:
    # CONTRIBUTING's `python -m pytest -n 2`, whatever plugins this machine has:
    # a stray pytest-benchmark warns under xdist, an error with filterwarnings.
    assert "python -m pytest -n 2" in (ROOT / "CONTRIBUTING.md").read_text()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider",
         "tests/schema/test_model.py"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_the_errors_page_lists_every_public_exception_class() -> None:
    import pkgutil

    import customop

    names = [m.name for m in pkgutil.iter_modules(customop.__path__) if not m.name.startswith("_")]
    for adapter in ("torch", "jax"):  # customop.torch imports torch, customop.jax imports jax
        if importlib.util.find_spec(adapter) is None:
            names.remove(adapter)
    classes = set()
    for package in ["customop", *(f"customop.{name}" for name in names)]:
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseException):
                classes.add(name)
    page = (ROOT / "docs" / "errors.md").read_text()
    listed = set(re.findall(r"^\| `(\w+)` \|", page, re.MULTILINE))
    assert classes, "no exception classes found"
    assert classes == listed, (
        f"not listed: {sorted(classes - listed)}; not public: {sorted(listed - classes)}"
    )

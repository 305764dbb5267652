"""Every Python block in docs/ and README.md runs, and its output is checked.

A ```python block is run in a namespace shared by the blocks of its page. If
the next block is a ```text block, it is the expected stdout of that python
block. Blocks fenced as ```python title="..." or ```pycon are treated alike;
blocks marked ```python no-run are skipped (shell or pseudo code only).
"""

from __future__ import annotations

import contextlib
import io
import linecache
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PAGES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def _blocks(page: Path) -> list[tuple[str, str, str]]:
    return [(m.group(1), m.group(2), m.group(3)) for m in FENCE.finditer(page.read_text())]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run(page: Path) -> None:
    blocks = _blocks(page)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for index, (language, options, code) in enumerate(blocks):
        if language != "python" or "no-run" in options:
            continue
        out = io.StringIO()
        filename = f"{page.name}[block {index}]"
        # Tracebacks (and, on Python 3.10, registration sources) read the block's lines.
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        with contextlib.redirect_stdout(out):
            exec(compile(code, filename, "exec"), namespace)
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        if following is not None and following[0] == "text":
            assert out.getvalue() == following[2], f"{page.name} block {index}"

"""mypy sees through @custom_op: each `# E: code` line is an error, and no other line is.

A line with two errors lists both codes, ``# E: misc, arg-type``; ``# N: text``
is a note (a revealed type).

Like attrs' test_mypy.yml: the case files are type-checked for real (in the
one mypy run of conftest.py), and the errors compared with the markers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.typing.conftest import CASES, ROOT

MARK = re.compile(r"#\s*([EN]):\s*(.+)$")
REPORT = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): (?P<kind>error|note): (?P<text>.*)$")


def _expected(path: Path) -> set[tuple[int, str, str]]:
    found = set()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        mark = MARK.search(line)
        if mark and mark.group(1) == "E":  # `# E: misc, arg-type`: two errors on the line
            found.update((number, "E", code.strip()) for code in mark.group(2).split(","))
        elif mark:
            found.add((number, mark.group(1), mark.group(2).strip()))
    return found


def _reported(path: Path, output: str) -> set[tuple[int, str, str]]:
    found = set()
    for line in output.splitlines():
        report = REPORT.match(line)
        if not report or Path(report["file"]).name != path.name:
            continue
        if report["kind"] == "error":
            code = re.search(r"\[([\w-]+)\]$", report["text"])
            found.add((int(report["line"]), "E", code.group(1) if code else report["text"]))
        elif report["text"].startswith("Revealed type"):
            found.add((int(report["line"]), "N", report["text"]))
    return found


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_mypy_errors_match_the_markers(mypy_output: str, path: Path) -> None:
    reported = _reported(path, mypy_output)
    assert reported == _expected(path), "\n".join(
        line for line in mypy_output.splitlines() if line.startswith(str(path.relative_to(ROOT)))
    )

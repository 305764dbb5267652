"""The seam between the core and its adapters (issue #22), measured and pinned.

Run it as a script for the figures (``python tests/test_seam.py``); as tests it
holds each of them to its target.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "customop"
MODULES = sorted(PACKAGE.rglob("*.py"))
ADAPTERS = ("torch", "dask", "autograd", "cpp")


def _relative(path: Path) -> str:
    return str(path.relative_to(PACKAGE))


def code_lines(path: Path) -> int:
    """Lines that are not blank, a comment, or part of a docstring."""
    text = path.read_text()
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.update(range(body[0].lineno, (body[0].end_lineno or 0) + 1))
    return sum(
        1
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.strip().startswith("#") and number not in docstrings
    )


def private_imports() -> list[tuple[str, int, str]]:
    """(module, line, imported module) of each import of another package's private module."""
    found = []
    for path in MODULES:
        parts = path.relative_to(PACKAGE).parts
        own = parts[0] if len(parts) > 1 else ""
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = node.module.split(".")
                other = names[0] == "customop" and len(names) > 2 and names[1] != own
                if other and any(name.startswith("_") for name in names[2:]):
                    found.append((_relative(path), node.lineno, node.module))
    return found


def places(pattern: str) -> list[str]:
    """The modules whose code (not comments) matches ``pattern``."""
    regex = re.compile(pattern)
    found = []
    for path in MODULES:
        lines = [line.split("#", 1)[0] for line in path.read_text().splitlines()]
        if any(regex.search(line) for line in lines):
            found.append(_relative(path))
    return found


#: The side tables the seam removed (module, name): per-op facts now live on the
#: op's dispatcher entry as extras (``customop.dispatch.Extra``).
REMOVED_TABLES = [
    ("dask/_blockwise.py", "_rules"),
    ("dispatch/_modes.py", "_rules"),
    ("ops/_checks.py", "_ATTACHED"),
    ("autograd/_tape.py", "_POSITIONS"),
    ("ops/_callhooks.py", "_hook"),
]


def module_tables() -> list[tuple[str, str, str]]:
    """(module, name, annotation) of every module-level annotated mutable mapping."""
    kinds = ("dict[", "WeakKeyDictionary[", "WeakValueDictionary[")
    found = []
    for path in MODULES:
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                annotation = ast.unparse(node.annotation)
                if any(kind in annotation for kind in kinds):
                    found.append((_relative(path), node.target.id, annotation))
    return found


def test_library_holds_the_front_ends_only() -> None:
    modules = [p for p in (PACKAGE / "library").glob("_*.py")]
    assert len(modules) <= 12, sorted(p.name for p in modules)


def test_no_module_is_over_400_code_lines() -> None:
    assert {_relative(p): code_lines(p) for p in MODULES if code_lines(p) > 400} == {}


def test_few_private_imports_across_packages_and_none_from_adapters() -> None:
    found = private_imports()
    assert len(found) <= 25, found
    assert [row for row in found if row[0].split("/")[0] in ADAPTERS] == []


@pytest.mark.parametrize(
    ("what", "pattern", "home"),
    [
        ("the compile door", r"compile\(.*\"exec\"\)|\bexec\(", ["ops/_codegen.py"]),
        ("the class-swap helper", r"\.__class__\s*=", ["ops/_swap.py"]),
        (
            "the kernel-selection function",
            r"table\[.*bit_length\(\) - 1\]",
            ["dispatch/_operator.py"],
        ),
        ("the call-code renderer", r"\"def __call__\(", ["ops/_calltemplate.py"]),
    ],
    ids=["compile", "class-swap", "kernel-selection", "renderer"],
)
def test_one_place_each(what: str, pattern: str, home: list[str]) -> None:
    # The schema package compiles annotation text (eval mode), which is not call code.
    found = [p for p in places(pattern) if not p.startswith("schema/")]
    assert found == home, f"{what}: {found}"


def op_keyed_tables(tables: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The module-level dicts among ``tables`` whose key is an operator."""
    keyed = r"(dict|Dictionary)\[(OperatorName|OperatorHandle|FunctionSchema)\b"
    return [row for row in tables if re.search(keyed, row[2])]


def test_no_per_op_side_table() -> None:
    tables = module_tables()
    assert op_keyed_tables(tables) == []
    assert [row for row in tables if row[:2] in REMOVED_TABLES] == []
    assert places(r"\bid\((schema|op|handle)\)") == []
    assert places(r"_owners\b") == []


if __name__ == "__main__":
    library = len(list((PACKAGE / "library").glob("_*.py")))
    largest = max(MODULES, key=code_lines)
    rows = private_imports()
    print(f"library/ modules: {library}")
    print(f"largest module: {_relative(largest)} ({code_lines(largest)} code lines)")
    print(f"cross-package private imports: {len(rows)}")
    for row in rows:
        print(f"    {row[0]}:{row[1]} {row[2]}")
    print(f"module-level tables keyed by an op: {len(op_keyed_tables(module_tables()))}")
    sys.exit(0)

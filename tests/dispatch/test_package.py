"""The package's public surface and its place in the layers."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import customop.dispatch

PACKAGE = Path(customop.dispatch.__file__).parent
ALLOWED_THIRD_PARTY = {"numpy", "pydantic", "typing_extensions"}
ALLOWED_CUSTOMOP = ("customop.dispatch", "customop.schema", "customop.exceptions")


def test_public_names() -> None:
    assert customop.dispatch.__all__ == sorted(customop.dispatch.__all__)
    assert customop.dispatch.__all__ == [
        "ArrayTypeInfo", "DispatchKey", "DispatchKeySet", "DispatchMode", "Dispatcher",
        "DispatcherSnapshot", "Epoch", "EpochClock", "Extra", "FallbackInfo", "Kernel",
        "KernelInfo", "LibraryInfo", "LibraryKind", "LocalKeysGuard", "OperatorHandle",
        "OperatorInfo", "OperatorListener", "Reason", "RegistrationHandle", "TableEntry",
        "active_modes", "below", "epoch", "exclude_keys", "fallthrough", "include_keys",
        "local_keys", "register_dispatch_mode",
    ]  # fmt: skip


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_dispatch_imports_only_lower_layers() -> None:
    bad = {}
    for path in sorted(PACKAGE.glob("*.py")):
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "customop":
                ok = name.startswith(ALLOWED_CUSTOMOP)
            else:
                ok = (
                    top in sys.stdlib_module_names
                    or top in ALLOWED_THIRD_PARTY
                    or top == "__future__"
                )
            if not ok:
                bad[path.name] = name
    assert bad == {}


def _docstring_lines(tree: ast.Module) -> int:
    scopes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, scopes) and ast.get_docstring(node, clean=False) is not None:
            first = node.body[0]
            count += (first.end_lineno or first.lineno) - first.lineno + 1
    return count


def test_modules_stay_small() -> None:
    # Docstrings do not count: the API reference asks for Args/Returns/Examples
    # on every public method, and documenting a module does not make it bigger
    # in the sense this limit guards (one concept per module).
    sizes = {}
    for path in PACKAGE.glob("*.py"):
        text = path.read_text()
        sizes[path.name] = len(text.splitlines()) - _docstring_lines(ast.parse(text))
    assert {name: size for name, size in sizes.items() if size > 400} == {}

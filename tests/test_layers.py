"""Layers import downward only (DESIGN §1), and only the runtime dependencies."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "customop"

#: Lower number = lower layer. A module may import its own layer and lower ones.
LAYERS: dict[str, int] = {
    "exceptions": 0,
    "schema": 1,
    "dispatch": 2,
    "tensor": 3,
    "library": 4,
    "fake": 5,
    "trace": 5,
    "autograd": 6,
    "torch": 7,  # adapters: each imports its own system lazily, nothing below imports them
    "dask": 7,
    "cpp": 7,
    "codegen": 8,
    "cli": 9,
}
TOP = 99  # customop/__init__.py and __main__.py see everything
RUNTIME_DEPENDENCIES = {"pydantic", "pydantic_core", "typing_extensions", "numpy"}
# Optional packages may only be imported inside functions (lazily), never at module level.
OPTIONAL = {"torch", "cupy", "jax", "yaml", "dask", "distributed"}
# ...except in their adapter package, which imports its system at module level: only a
# user who wants the adapter imports it (`import customop.torch`), never `import customop`.
ADAPTER_IMPORTS: dict[str, set[str]] = {"torch": {"torch"}}


def _layer(module_path: Path) -> int:
    parts = module_path.relative_to(PACKAGE).with_suffix("").parts
    head = parts[0].lstrip("_") if parts[0] not in ("__init__", "__main__") else ""
    if not head:
        return TOP
    if head not in LAYERS:
        pytest.fail(f"{module_path}: module outside every layer; add it to LAYERS in this test")
    return LAYERS[head]


def _imports(tree: ast.Module, *, top_level_only: bool) -> list[tuple[str, int]]:
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_downward(path: Path) -> None:
    tree = ast.parse(path.read_text())
    own = _layer(path)
    for module, line in _imports(tree, top_level_only=False):
        if not module.startswith("customop."):
            continue
        target = module.split(".")[1]
        if target in LAYERS and LAYERS[target] > own:
            pytest.fail(f"{path.name}:{line} imports {module}, a higher layer")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_runtime_dependencies_at_module_level(path: Path) -> None:
    tree = ast.parse(path.read_text())
    package = path.relative_to(PACKAGE).parts[0]
    for module, line in _imports(tree, top_level_only=True):
        root = module.split(".")[0]
        if root in ADAPTER_IMPORTS.get(package, set()):
            continue
        allowed = (
            root in RUNTIME_DEPENDENCIES or root == "customop" or root in sys.stdlib_module_names
        )
        assert allowed and root not in OPTIONAL, f"{path.name}:{line} imports {module} eagerly"


def test_import_customop_imports_no_optional_package() -> None:
    names = ", ".join(repr(name) for name in sorted(OPTIONAL))
    code = f"import sys, customop; print(sorted(set(sys.modules) & {{{names}}}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_layer_table_covers_every_package() -> None:
    packages = {
        p.name.lstrip("_") for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"
    }
    modules = {p.stem.lstrip("_") for p in PACKAGE.glob("*.py") if not p.stem.startswith("__")}
    assert packages | modules <= set(LAYERS)


def test_import_customop_leaves_numpy_unloaded() -> None:
    """numpy is a runtime dependency, but loading it costs ~90 ms that `import customop` skips."""
    code = "import sys, customop; print('numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"

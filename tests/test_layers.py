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
    "symbolic": 3,
    "tensor": 4,
    "ops": 5,
    "adapter": 6,  # the public interface adapters use (docs/concepts/adapters.md)
    "fake": 7,
    "trace": 7,
    "autograd": 8,
    "dask": 8,
    "vmap": 8,  # batching rules and customop.vmap (docs/vmap.md)
    "library": 9,
    "torch": 10,  # adapters: each imports its own system lazily, nothing below imports them
    "cpp": 10,
    "jax": 10,
    "codegen": 11,
    "cli": 12,
}
TOP = 99  # customop/__init__.py and __main__.py see everything
RUNTIME_DEPENDENCIES = {"pydantic", "pydantic_core", "typing_extensions", "numpy"}
# Optional packages may only be imported inside functions (lazily), never at module level.
OPTIONAL = {"torch", "cupy", "jax", "jaxlib", "yaml", "dask", "distributed"}
# ...except in their adapter package, which imports its system at module level: only a
# user who wants the adapter imports it (`import customop.torch`), never `import customop`.
ADAPTER_IMPORTS: dict[str, set[str]] = {"torch": {"torch"}, "jax": {"jax", "jaxlib"}}


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


@pytest.mark.parametrize("adapter", sorted(ADAPTER_IMPORTS))
def test_import_customop_leaves_the_adapters_that_import_their_system_unloaded(
    adapter: str,
) -> None:
    """``customop.jax`` imports jax at module level: only ``import customop.jax`` may load it."""
    code = f"import sys, customop; print('customop.{adapter}' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


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


def _declared(package: str) -> tuple[set[str], set[str]]:
    """``__all__`` and ``__internal__`` of a package's ``__init__``, read without importing."""
    tree = ast.parse((PACKAGE / package / "__init__.py").read_text())
    found: dict[str, set[str]] = {"__all__": set(), "__internal__": set()}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in found and isinstance(node.value, ast.List | ast.Tuple):
                found[name] = {
                    elt.value for elt in node.value.elts if isinstance(elt, ast.Constant)
                }
    return found["__all__"], found["__internal__"]


def _own_package(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else ""


def _cross_imports(path: Path) -> list[tuple[str, str, str, int]]:
    """(package, module, name, line) of each name imported from another customop package."""
    own = _own_package(path)
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            outside = parts[0] == "customop" and len(parts) >= 2 and parts[1] != own
            if outside and (PACKAGE / parts[1]).is_dir():
                found += [(parts[1], node.module, a.name, node.lineno) for a in node.names]
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_other_packages_are_used_through_their_declared_names(path: Path) -> None:
    """jax's ``_src`` + facade rule: a package takes from another only what that
    package's ``__init__`` declares, public (``__all__``) or internal (``__internal__``)."""
    for package, module, name, line in _cross_imports(path):
        public, internal = _declared(package)
        if module.count(".") > 1 and name not in internal:
            pytest.fail(
                f"{path.relative_to(PACKAGE)}:{line} imports {name} from {module}, a private "
                f"module of customop.{package}. Import it from customop.{package}, and if it "
                f"is not declared there, add to customop/{package}/__init__.py:\n"
                f"    from {module} import {name} as {name}\n"
                f"and {name!r} to its __internal__."
            )
        if module.count(".") == 1 and name not in public | internal:
            pytest.fail(
                f"{path.relative_to(PACKAGE)}:{line} imports {name} from customop.{package}, "
                f"which declares no such name. Add {name!r} to its __all__ (public) or "
                "__internal__ (for sibling packages only)."
            )


ADAPTERS = ("torch", "dask", "autograd", "jax")


def test_private_imports_across_packages_stay_few() -> None:
    """The seam (issue #22): at most 25 imports of another package's private module,
    none of them from an adapter (torch, dask, autograd, jax)."""
    private = [
        (path, package, module, line)
        for path in MODULES
        for package, module, _, line in _cross_imports(path)
        if module.count(".") > 1
    ]
    from_adapters = [p for p in private if _own_package(p[0]) in ADAPTERS]
    assert from_adapters == []
    assert len(private) <= 25, private

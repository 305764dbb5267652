"""The API reference covers the public surface, and every public name has a docstring.

The public surface is the ``__all__`` of ``customop`` and of each public
subpackage or module under it (``customop.dispatch``, ``customop.exceptions``,
...), found by walking the package, so a new subpackage is checked without
editing this file.

Every public name is documented once, on the reference page of its **home**:
the public subpackage whose private modules define it (``custom_op`` lives in
``customop.library._custom_op``, so its page is ``docs/reference/library.md``
and its entry ``::: customop.library.custom_op``). A name that no subpackage
exports (``customop.dispatcher``) lives on ``docs/reference/index.md``. The
index page also lists every top-level ``customop.X`` name with a link to its
entry, so readers who write ``customop.X`` find it.

Docstrings are Google style: every public function and method documents its
parameters under ``Args:`` and its result under ``Returns:`` (``Raises:``
where it raises on purpose), and the main entry points carry examples, run
here as doctests.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
import pkgutil
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import customop

ROOT = Path(__file__).parent.parent
REFERENCE = ROOT / "docs" / "reference"


#: Adapter subpackages that import their system when imported: checked where it is installed
#: (CI's main Python has torch; the other Pythons' runs check the rest).
NEEDS: dict[str, str] = {"customop.torch": "torch", "customop.jax": "jax"}


def public_packages() -> list[str]:
    """``customop`` and every public subpackage or module directly under it."""
    subs = (m.name for m in pkgutil.iter_modules(customop.__path__) if not m.name.startswith("_"))
    names = [f"customop.{name}" for name in sorted(subs)]
    present = [n for n in names if n not in NEEDS or importlib.util.find_spec(NEEDS[n]) is not None]
    return ["customop", *present]


def _module(name: str) -> ModuleType:
    # importlib, not attribute access: `customop.trace` the function shadows
    # the subpackage of the same name.
    return importlib.import_module(name)


def home(package: str, name: str) -> str:
    """The package whose reference page documents ``package.name``."""
    obj = getattr(_module(package), name)
    defined_in = getattr(obj, "__module__", None) if _is_api_object(obj) else None
    exporters = [p for p in public_packages()[1:] if name in getattr(_module(p), "__all__", ())]
    exporters = [p for p in exporters if getattr(_module(p), name) is obj]
    for p in exporters:
        if defined_in is not None and (defined_in == p or defined_in.startswith(p + ".")):
            return p
    return exporters[0] if exporters else "customop"


def page_of(package: str) -> Path:
    """``customop.dispatch`` -> ``docs/reference/dispatch.md``; ``customop`` -> index.md."""
    return REFERENCE / ("index.md" if package == "customop" else package.split(".")[1] + ".md")


def _is_api_object(obj: object) -> bool:
    # A type alias such as `Kernel = Callable[..., Any]` is no class: documented by the
    # comment above it in the source (3.10's `isclass` says True for generic aliases).
    if isinstance(obj, types.GenericAlias) or typing.get_origin(obj) is not None:
        return False
    return inspect.isclass(obj) or inspect.isfunction(obj)


def public_names() -> Iterator[tuple[str, str]]:
    """(package, name) for every name in every public package's ``__all__``."""
    for package in public_packages():
        for name in getattr(_module(package), "__all__", ()):
            yield package, name


def _own_members(cls: type) -> Iterator[tuple[str, object]]:
    """Public methods and properties a class defines itself (not inherited).

    A method is yielded as its function, a property as itself.
    """
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, classmethod | staticmethod):
            yield name, value.__func__
        elif isinstance(value, property):
            yield name, value  # its __doc__ is the getter's
        elif inspect.isfunction(value):
            yield name, value


def _has_doc(obj: object) -> bool:
    return bool((getattr(obj, "__doc__", None) or "").strip())


def _documented_objects() -> Iterator[tuple[str, object]]:
    seen: set[int] = set()
    for package, name in public_names():
        obj = getattr(_module(package), name)
        if not _is_api_object(obj) or id(obj) in seen:
            continue
        seen.add(id(obj))
        path = f"{home(package, name)}.{name}"
        yield path, obj
        if inspect.isclass(obj):
            for member, value in _own_members(obj):
                yield f"{path}.{member}", value


def test_every_public_name_and_method_has_a_docstring() -> None:
    missing = [path for path, obj in _documented_objects() if not _has_doc(obj)]
    assert not missing, (
        "public names without a docstring (write a Google-style one: a summary line, "
        "then Args: / Returns: / Raises: where they apply):\n  " + "\n  ".join(missing)
    )


#: The entry points a reader starts from: their docstrings carry examples.
ENTRY_POINTS = (
    "customop.library.custom_op",
    "customop.library.Library",
    "customop.library.register_fake",
    "customop.trace.trace",
    "customop.fake.opcheck",
    "customop.dispatch.Dispatcher",
)


def test_functions_and_methods_document_args_and_returns() -> None:
    """Google-style sections: Args when there are parameters, Returns unless None."""
    missing = []
    for path, obj in _documented_objects():
        if not inspect.isfunction(obj):  # classes and properties: a docstring is enough
            continue
        signature = inspect.signature(obj)
        parameters = [p for p in signature.parameters if p not in ("self", "cls")]
        doc = obj.__doc__ or ""
        returns = signature.return_annotation not in ("None", None, inspect.Signature.empty)
        if (parameters and "Args:" not in doc) or (returns and "Returns:" not in doc):
            missing.append(path)
    assert not missing, "add Args: / Returns: sections to the docstrings of:\n  " + "\n  ".join(
        missing
    )


@pytest.mark.parametrize("path", ENTRY_POINTS)
def test_entry_points_have_examples_that_run(path: str) -> None:
    package, name = path.rsplit(".", 1)
    obj = getattr(_module(package), name)
    assert ">>>" in (obj.__doc__ or ""), f"{path}: add an Examples: section"


def _doctested() -> list[str]:
    return [path for path, obj in _documented_objects() if ">>>" in (obj.__doc__ or "")]


@pytest.mark.parametrize("path", _doctested())
def test_docstring_examples_run(path: str) -> None:
    obj = dict(_documented_objects())[path]
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(obj, path, module=inspect.getmodule(obj)):
        runner.run(test)
    assert runner.failures == 0, f"{path}: its docstring examples fail (see the output above)"


def _directives(page: Path) -> set[str]:
    if not page.exists():
        return set()
    return set(re.findall(r"^::: (\S+)\s*$", page.read_text(), re.MULTILINE))


def test_every_public_name_is_in_the_reference_once() -> None:
    problems = []
    expected: dict[Path, set[str]] = {}
    for package, name in public_names():
        owner = home(package, name)
        expected.setdefault(page_of(owner), set()).add(f"{owner}.{name}")
    for page, paths in sorted(expected.items()):
        found = _directives(page)
        rel = page.relative_to(ROOT)
        if not page.exists():
            package = page.stem if page.stem != "index" else ""
            problems.append(
                f"{rel} does not exist: create it with the text below (and a sentence on "
                f"what the subpackage is for), add '- customop.{package}: {rel.as_posix()[5:]}' "
                "to the 'API reference' nav in mkdocs.yml, and a row to the table in "
                f"docs/reference/index.md:\n\n{_new_page(f'customop.{package}', paths)}"
            )
            continue
        problems += [f"add '::: {path}' to {rel}" for path in sorted(paths - found)]
        problems += [f"{rel} documents '{path}', which is not public" for path in found - paths]
    all_directives = [d for page in REFERENCE.glob("*.md") for d in _directives(page)]
    problems += [
        f"'::: {d}' appears twice" for d in set(all_directives) if all_directives.count(d) > 1
    ]
    assert not problems, "API reference out of date:\n  " + "\n  ".join(problems)


def _index_link(name: str) -> str:
    owner = home("customop", name)
    return f"[`customop.{name}`]({page_of(owner).name}#{owner}.{name})"


def _new_page(package: str, paths: set[str]) -> str:
    entries = "\n\n".join(f"::: {path}" for path in sorted(paths, key=str.lower))
    return f"# {package}\n\n{entries}\n"


def test_top_level_names_link_to_their_entry() -> None:
    index = (REFERENCE / "index.md").read_text()
    missing = [
        f"| {_index_link(name)} | `{home('customop', name)}.{name}` |"
        for name in customop.__all__
        if _index_link(name) not in index
    ]
    assert not missing, "add these rows to the table in docs/reference/index.md:\n" + "\n".join(
        missing
    )


def test_reference_pages_are_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    missing = [p.name for p in REFERENCE.glob("*.md") if f"reference/{p.name}" not in nav]
    assert not missing, f"add to the 'API reference' nav in mkdocs.yml: {missing}"


@pytest.mark.parametrize("package", public_packages(), ids=str)
def test_package_declares_all(package: str) -> None:
    exported = list(getattr(_module(package), "__all__", ()))
    assert exported, f"{package} has no __all__: the reference cannot tell what is public"

"""Kernel paths resolved at gen time: a path that names nothing is a problem of its line.

The registration module imports every kernel when it is imported; a wrong
path would fail there, far from the YAML. So `generate` imports each kernel's
module now, when the module can be found (importing runs its code, as the
registration module will), and looks the kernel up in it. A module that
cannot be found from here (it may exist only where the generated module
runs) is listed in the report as not checked. ``GenOptions(check_kernels=
False)`` (``--no-check-kernels``) imports nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator
from typing import TypeAlias

from customop.codegen._entry import did_you_mean
from customop.codegen._model import Declaration, DeclarationFile, KernelPath, Unused, tally
from customop.schema._clip import clip, clip_repr

__all__ = ["check_kernels"]

#: A problem of the file: its line, and its text (``<file>:<line>: <subject>: <message>``).
Problem: TypeAlias = tuple[int, str]

_SKIP = "or pass --no-check-kernels (check_kernels=False) to generate without importing kernels"


def check_kernels(declarations: DeclarationFile) -> tuple[list[Problem], tuple[Unused, ...]]:
    """Resolve every bound kernel path of ``declarations``.

    Args:
        declarations: the validated declarations.

    Returns:
        The problems, as (line, ``"<file>:<line>: entry '<func>': <message>"``), and
        the kernel modules that could not be found (not checked), tallied by module.
    """
    problems: list[Problem] = []
    unchecked: list[tuple[str, int]] = []
    found: dict[str, object | None] = {}  # module -> the module, or None when not found
    for decl, key, path, line in _kernels(declarations):
        if path.module not in found:
            found[path.module] = _find(path.module)
        module = found[path.module]
        if module is None:
            unchecked.append((path.module, line))
            continue
        message = _problem(module, path, key)
        if message is not None:
            subject = f"entry {clip_repr(str(decl.func.name))}"
            problems.append((line, f"{declarations.path}:{line}: {subject}: {message}"))
    return problems, tally(unchecked)


def _kernels(declarations: DeclarationFile) -> Iterator[tuple[Declaration, str, KernelPath, int]]:
    for decl in declarations.declarations:
        for binding in decl.dispatch:
            if isinstance(binding.kernel, KernelPath):  # a C++ library is loaded, not imported
                yield decl, binding.key, binding.kernel, binding.line


def _find(module: str) -> object | None:
    """The imported module, None if it cannot be found, or the error its import raised."""
    try:
        if importlib.util.find_spec(module) is None:
            return None
    except ModuleNotFoundError:  # a parent package is missing
        return None
    except Exception as error:  # importing a parent package raised
        return error
    try:
        return importlib.import_module(module)
    except Exception as error:
        return error


def _problem(module: object, path: KernelPath, key: str) -> str | None:
    written = f"{path.module}:{path.qualname}"
    if isinstance(module, Exception):
        detail = clip(str(module).splitlines()[0] if str(module) else "", 200)
        return (
            f"kernel {clip_repr(written)} for {key}: importing module {clip_repr(path.module)} "
            f"raised {type(module).__name__}: {detail}. The generated module imports it too, "
            f"and would fail the same way. Fix the module, {_SKIP}."
        )
    target = module
    for depth, part in enumerate(path.qualname.split(".")):
        if not hasattr(target, part):
            owner = ".".join([path.module, *path.qualname.split(".")[:depth]])
            hint = did_you_mean(part, tuple(n for n in dir(target) if not n.startswith("__")))
            return (
                f"kernel {clip_repr(written)} for {key}: {clip_repr(owner)} has no attribute "
                f"{clip_repr(part)}. The generated module would fail when imported. "
                f"{hint + ' ' if hint else ''}Fix the path, {_SKIP}."
            )
        target = getattr(target, part)
    if not callable(target):
        return (
            f"kernel {clip_repr(written)} for {key} is a {type(target).__name__}, not a "
            f"function. A kernel is called with the op's arguments. Name a function, {_SKIP}."
        )
    return None

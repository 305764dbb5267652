"""The one door for generated call code: compile it, name it, and forget it.

Every generated function (customop's call code and the call code adapters
install, such as ``customop.torch``'s) is compiled here under a file name
``<customop {kind} {ns::op}>``, with its source in ``linecache`` so
tracebacks and debuggers show it (attrs' ``_linecache_and_compile``), and
`forget` drops that entry when the op's call code goes away.
"""

from __future__ import annotations

import builtins
import linecache
import sys
from collections.abc import Callable, Sequence
from types import CodeType, FunctionType
from typing import Any

__all__ = ["code_function", "compile_function", "filename", "forget"]


def filename(kind: str, name: str) -> str:
    """The file name tracebacks show for generated code of ``kind`` for op ``name``."""
    return f"<customop {kind} {name}>"


def _remember(path: str, lines: Sequence[str]) -> None:
    # A full entry (size, mtime None, lines, name), which checkcache keeps:
    # linecache never loads a "<...>" name lazily, so tracebacks would show no source.
    linecache.cache[path] = (sum(map(len, lines)), None, list(lines), path)


def _finish(
    fn: FunctionType, defaults: Sequence[Any], kwdefaults: dict[str, Any], qualname: str
) -> FunctionType:
    fn.__defaults__ = tuple(defaults) or None
    fn.__kwdefaults__ = kwdefaults or None
    fn.__qualname__ = qualname
    return fn


def compile_function(
    kind: str,
    name: str,
    source: str,
    namespace: dict[str, Any],
    *,
    defaults: Sequence[Any] = (),
    kwdefaults: dict[str, Any] | None = None,
    qualname: str = "__call__",
) -> Callable[..., Any]:
    """Compile ``source`` (one ``def __call__``) with ``namespace`` as its globals.

    Args:
        kind: what made it (``"generated"`` for customop's, an adapter's name for its own).
        name: the op's name, ``ns::op``.
        source: the function's text.
        namespace: the function's globals.
        defaults: the positional parameters' defaults.
        kwdefaults: the keyword-only parameters' defaults.
        qualname: the function's ``__qualname__``.

    Returns:
        The function.
    """
    path = filename(kind, name)
    exec(compile(source, path, "exec"), namespace)
    fn: FunctionType = namespace.pop("__call__")
    _remember(path, source.splitlines(keepends=True))
    return _finish(fn, defaults, kwdefaults or {}, qualname)


def code_function(
    kind: str,
    name: str,
    code: CodeType,
    lines: Sequence[str],
    namespace: dict[str, Any],
    *,
    defaults: Sequence[Any] = (),
    kwdefaults: dict[str, Any] | None = None,
    qualname: str = "__call__",
) -> Callable[..., Any]:
    """A function of an already compiled ``code`` (a shared template), named for the op.

    Args:
        kind: as for `compile_function`.
        name: the op's name, ``ns::op``.
        code: the function's code object.
        lines: its source lines, for tracebacks.
        namespace: the function's globals.
        defaults: the positional parameters' defaults.
        kwdefaults: the keyword-only parameters' defaults.
        qualname: the function's ``__qualname__``.

    Returns:
        The function.
    """
    path = filename(kind, name)
    # Profilers that show a code's qualname (3.11+) show the op's name.
    if sys.version_info >= (3, 11):
        code = code.replace(co_qualname=name, co_filename=path)
    else:
        code = code.replace(co_filename=path)
    # Real globals, as exec gives them: Dynamo (torch.compile) reads __builtins__ from
    # every frame it looks at, and fails inside on a function without them.
    namespace.setdefault("__builtins__", builtins)
    fn = FunctionType(code, namespace, "__call__")
    _remember(path, lines)
    return _finish(fn, defaults, kwdefaults or {}, qualname)


def forget(kind: str, name: str) -> None:
    """Drop the source kept for tracebacks of ``kind`` call code of op ``name``.

    Args:
        kind: as given to `compile_function`.
        name: the op's name, ``ns::op``.
    """
    linecache.cache.pop(filename(kind, name), None)

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

__all__ = ["compile_function", "compile_template", "filename", "forget"]


def filename(kind: str, name: str) -> str:
    """The file name tracebacks show for generated code of ``kind`` for op ``name``."""
    return f"<customop {kind} {name}>"


def compile_template(source: str) -> CodeType:
    """The code object of the one ``def`` in ``source``: a template that
    `compile_function` later names for each op (with that op's source lines)."""
    module = compile(source, "<customop>", "exec")
    return next(c for c in module.co_consts if isinstance(c, CodeType))


def compile_function(
    kind: str,
    name: str,
    source: str | tuple[CodeType, Sequence[str]],
    namespace: dict[str, Any],
    *,
    defaults: Sequence[Any] = (),
    kwdefaults: dict[str, Any] | None = None,
    qualname: str = "__call__",
) -> Callable[..., Any]:
    """The function of ``source`` (one ``def __call__``), with ``namespace`` as its globals.

    Args:
        kind: what made it (``"generated"`` for customop's, an adapter's name for its own).
        name: the op's name, ``ns::op``.
        source: the function's text, or a compiled template (`compile_template`,
            renamed for the op) with the lines of its text.
        namespace: the function's globals.
        defaults: the positional parameters' defaults.
        kwdefaults: the keyword-only parameters' defaults.
        qualname: the function's ``__qualname__``.

    Returns:
        The function, its file name ``<customop {kind} {name}>``.
    """
    path = filename(kind, name)
    if isinstance(source, str):
        code = compile_template(source)
        lines: Sequence[str] = source.splitlines(keepends=True)
    else:
        code, lines = source
    # Profilers that show a code's qualname (3.11+) show the op's name.
    if sys.version_info >= (3, 11):
        code = code.replace(co_qualname=name, co_filename=path)
    else:
        code = code.replace(co_filename=path)
    # Real globals, as exec gives them: Dynamo (torch.compile) reads __builtins__ from
    # every frame it looks at, and fails inside on a function without them.
    namespace.setdefault("__builtins__", builtins)
    fn = FunctionType(code, namespace, "__call__", tuple(defaults) or None)
    fn.__kwdefaults__ = kwdefaults or None
    fn.__qualname__ = qualname
    # A full entry (size, mtime None, lines, name), which checkcache keeps:
    # linecache never loads a "<...>" name lazily, so tracebacks would show no source.
    linecache.cache[path] = (sum(map(len, lines)), None, list(lines), path)
    return fn


def forget(kind: str, name: str) -> None:
    """Drop the source kept for tracebacks of ``kind`` call code of op ``name``.

    Args:
        kind: as given to `compile_function`.
        name: the op's name, ``ns::op``.
    """
    linecache.cache.pop(filename(kind, name), None)

"""Checking a kernel's or fake impl's Python signature against the op's schema.

torch accepts a fake impl whose parameters do not match the schema and fails
later, deep inside a trace (pytorch#181851). customop checks at registration:
the dispatcher passes positional arguments by position and keyword-only ones
by name, so names and order must match.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from customop.exceptions import RegistrationError
from customop.schema import FunctionSchema

__all__ = ["check_signature"]

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _mismatch(fn: Callable[..., Any], schema: FunctionSchema, names: bool) -> str | None:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None  # builtins and C callables: nothing to compare
    var_positional = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    var_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    if var_positional and var_keyword:
        return None  # (*args, **kwargs) takes anything
    if not names:
        return _cannot_take(params, schema, var_positional, var_keyword)
    expected = [arg.name for arg in schema.arguments]
    plain = [p for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    for index, arg in enumerate(schema.arguments):
        if index >= len(plain):
            return f"it has no parameter for argument {arg.name!r}"
        param = plain[index]
        if param.name != arg.name:
            return f"parameter {index} is named {param.name!r}, the schema's is {arg.name!r}"
        if not arg.kwarg_only and param.kind not in _POSITIONAL:
            return f"parameter {arg.name!r} is keyword-only, but the schema passes it by position"
    extra = [p for p in plain[len(expected) :] if p.default is inspect.Parameter.empty]
    if extra:
        return f"it has extra required parameter {extra[0].name!r}"
    return None


def _cannot_take(
    params: list[inspect.Parameter], schema: FunctionSchema, var_positional: bool, var_keyword: bool
) -> str | None:
    """Why ``params`` cannot take the schema's arguments (positional ones by position)."""
    positional = [p for p in params if p.kind in _POSITIONAL]
    by_name = {p.name: p for p in params if p.kind is not inspect.Parameter.POSITIONAL_ONLY}
    count = len(schema.positional_arguments)
    if len(positional) < count and not var_positional:
        return f"it takes {len(positional)} positional argument(s), the schema passes {count}"
    for arg in schema.kwarg_only_arguments:
        if arg.name not in by_name and not var_keyword:
            return f"it has no parameter for keyword-only argument {arg.name!r}"
    taken = {p.name for p in positional[:count]} | {a.name for a in schema.kwarg_only_arguments}
    for param in params:
        required = param.default is inspect.Parameter.empty
        plain = param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD)
        if required and plain and param.name not in taken:
            return f"it has extra required parameter {param.name!r}"
    return None


def check_signature(
    fn: Callable[..., Any], schema: FunctionSchema, api: str, what: str, *, names: bool = True
) -> None:
    """Raise `RegistrationError` when ``fn`` cannot take ``schema``'s arguments.

    With ``names=False`` (``Library.impl``, as torch's) positional parameters
    may have any names: only whether ``fn`` can take the arguments is checked.
    """
    problem = _mismatch(fn, schema, names)
    if problem is None:
        return
    try:
        shown = f"{getattr(fn, '__name__', fn)}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        shown = repr(fn)
    order = "in order" if names else "positional ones first"
    raise RegistrationError(
        f"{api}: the {what} {shown} does not match the schema {schema}: {problem}. "
        f"The dispatcher calls it with the op's arguments, positional ones by position and "
        f"keyword-only ones by name. Give it the schema's parameters, {order}."
    )

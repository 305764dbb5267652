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


def _mismatch(fn: Callable[..., Any], schema: FunctionSchema) -> str | None:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None  # builtins and C callables: nothing to compare
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params) and any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params
    ):
        return None  # (*args, **kwargs) takes anything
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


def check_signature(fn: Callable[..., Any], schema: FunctionSchema, api: str, what: str) -> None:
    """Raise `RegistrationError` when ``fn`` cannot take ``schema``'s arguments."""
    problem = _mismatch(fn, schema)
    if problem is None:
        return
    try:
        shown = f"{getattr(fn, '__name__', fn)}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        shown = repr(fn)
    raise RegistrationError(
        f"{api}: the {what} {shown} does not match the schema {schema}: {problem}. "
        f"The dispatcher calls it with the op's arguments, positional ones by position and "
        f"keyword-only ones by name. Give it the schema's parameters, in order."
    )

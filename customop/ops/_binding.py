"""Binding errors (missing, surplus, unknown arguments) and the Python signature of a schema."""

from __future__ import annotations

import inspect
from typing import Any, Final, NoReturn, final

from customop.schema import FunctionSchema, close_matches

__all__ = ["MISSING", "binding_error", "explaining_qualname", "python_signature"]


@final
class _Missing:
    """The default of a required parameter in generated call code: "not passed"."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<required>"


MISSING: Final = _Missing()


def python_signature(schema: FunctionSchema, *, method: bool) -> inspect.Signature:
    """The signature users should see: the schema's names, kinds and defaults."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)] if method else []
    for arg in schema.arguments:
        kind = (
            inspect.Parameter.KEYWORD_ONLY
            if arg.kwarg_only
            else inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        default = inspect.Parameter.empty if arg.default is None else arg.default.value
        params.append(inspect.Parameter(arg.name, kind, default=default))
    return inspect.Signature(params)


def explaining_qualname(name: str, api: str, names: tuple[str, ...], npos: int) -> str:
    """The ``__qualname__`` of a generated call function with parameters ``names``
    (the first ``npos`` positional) for the op ``name``.

    NOTE: generated call functions collect surplus positionals and unknown
    keywords and default every parameter, so Python raises one binding error
    of its own, before any of our code runs: an argument given both by
    position and by name. CPython words it as ``f"{__qualname__}() got multiple
    values for argument 'x'"`` (3.10-3.13), so the qualname carries the
    explanation, at no cost per call: "ns::op: pass each argument once, by
    position or by name (its parameters are (x, y, *, alpha)); this call to
    ns::op() got multiple values for argument 'x'". The parameters, not the
    schema's text: that costs ~7 µs to render, on every op's first call.
    """
    params = [*names[:npos], "*", *names[npos:]] if npos < len(names) else list(names)
    return (
        f"{api}: pass each argument once, by position or by name (its parameters are "
        f"({', '.join(params)})); this call to {name}"
    )


def binding_error(
    schema: FunctionSchema,
    values: tuple[Any, ...],
    extra: tuple[Any, ...],
    api: str,
    unknown: dict[str, Any] | None = None,
) -> NoReturn:
    """Raise the TypeError for a call whose arguments do not bind to ``schema``:
    surplus positionals (``extra``), unknown keywords, or a missing argument."""
    npos = sum(1 for arg in schema.arguments if not arg.kwarg_only)
    if unknown:
        _unknown_keyword(schema, next(iter(unknown)), api)
    if extra:
        raise TypeError(
            f"{api}: takes {npos} positional argument(s) but {npos + len(extra)} were given. "
            f"The schema is {schema}. Pass keyword-only arguments by name, and drop the extra ones."
        )
    missing = [arg for arg, value in zip(schema.arguments, values, strict=True) if value is MISSING]
    where = (
        "keyword-only"
        if missing[0].kwarg_only
        else f"position {schema.arguments.index(missing[0])}"
    )
    raise TypeError(
        f"{api}: missing required argument {missing[0].name!r} ({where}, {missing[0].type}). "
        f"The schema is {schema}. Pass a value for it."
    )


def _unknown_keyword(schema: FunctionSchema, keyword: str, api: str) -> NoReturn:
    names = [arg.name for arg in schema.arguments]
    close = close_matches(keyword, names, n=1, cutoff=0.6)
    fix = (
        f"Did you mean {close[0]!r}?"
        if close
        else f"Pass only the schema's arguments: {', '.join(names) or 'none'}."
    )
    raise TypeError(
        f"{api}: got an unexpected keyword argument {keyword!r}. The schema is {schema}. {fix}"
    )

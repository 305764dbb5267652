"""Printing a FunctionSchema back to text, in torch's canonical or the source spelling."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from customop.schema._model import FunctionSchema

__all__ = ["PrintStyle", "format_schema"]

PrintStyle = Literal["canonical", "source"]


def _format_returns(schema: FunctionSchema, style: PrintStyle) -> str:
    returns = [
        f"{r.type.format(style)} {r.name}" if r.name else r.type.format(style)
        for r in schema.returns
    ]
    single = len(returns) == 1 and not schema.is_varret
    # Like torch: one return needs no parentheses, unless it starts with one
    # (`-> ((str, t)[])` would otherwise read as a tuple of two returns).
    paren = not (single or (not returns and schema.is_varret)) or (
        single and returns[0].startswith("(")
    )
    if schema.is_varret:
        returns.append("...")
    body = ", ".join(returns)
    return f"({body})" if paren else body


def format_schema(schema: FunctionSchema, style: PrintStyle = "canonical") -> str:
    parts: list[str] = []
    seen_kwarg_only = False
    for arg in schema.arguments:
        if arg.kwarg_only and not seen_kwarg_only:
            parts.append("*")
            seen_kwarg_only = True
        parts.append(arg.format(style))
    if schema.is_vararg:
        parts.append("...")
    name = "" if schema.name is None else str(schema.name)
    return f"{name}({', '.join(parts)}) -> {_format_returns(schema, style)}"

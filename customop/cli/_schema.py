"""``customop schema TEXT``: parse, validate and explain each part of a schema."""

from __future__ import annotations

from customop.schema import Argument, FunctionSchema, PrintStyle, Return, parse_schema

__all__ = ["explain_schema"]


def _describe_argument(arg: Argument) -> str:
    notes = []
    if arg.kwarg_only:
        notes.append("keyword-only")
    if arg.default is not None:
        notes.append(f"default {arg.default.spelling}")
    if arg.is_write:
        notes.append("mutated by the op")
    elif arg.alias_info is not None:
        notes.append(f"aliases set {arg.alias_info}")
    if arg.tensor_kind is not None:
        notes.append(f"dispatches on it ({arg.tensor_kind})")
    suffix = f"  [{', '.join(notes)}]" if notes else ""
    return f"  {arg.name}: {arg.type}{suffix}"


def _describe_return(index: int, ret: Return) -> str:
    alias = ret.alias_info
    note = f"  [aliases input set {alias}]" if alias is not None else ""
    return f"  {ret.name or f'#{index}'}: {ret.type}{note}"


def explain(schema: FunctionSchema, style: PrintStyle = "canonical") -> str:
    lines = [schema.format(style), ""]
    if schema.name is not None:
        lines.append(f"operator:  {schema.name.qualified_name}")
        lines.append(f"overload:  {schema.overload_name or '(default)'}")
    kind = "mutable (writes its inputs)" if schema.is_mutable else "functional"
    lines.append(f"kind:      {kind}")
    lines.append(f"arguments ({len(schema.arguments)}):")
    lines.extend(_describe_argument(arg) for arg in schema.arguments)
    if schema.is_vararg:
        lines.append("  ...: any further arguments")
    lines.append(f"returns ({len(schema.returns)}):")
    lines.extend(_describe_return(i, ret) for i, ret in enumerate(schema.returns))
    if schema.is_varret:
        lines.append("  ...: any further returns")
    return "\n".join(lines)


def explain_schema(text: str, style: PrintStyle = "canonical") -> str:
    return explain(parse_schema(text), style)

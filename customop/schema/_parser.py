"""``parse_schema`` and ``parse_operator_name``: text to `FunctionSchema`.

The grammar is torch's (``torch/csrc/jit/frontend/function_schema_parser.cpp``)::

    schema   := [name] '(' [arg (',' arg)*] ')' '->' returns
    name     := [ns '::'] ident ['.' overload]
    arg      := '*' | '...' | type ident ['=' default]
    returns  := '(' [ret (',' ret)*] ')' | ret
    ret      := '...' | type [ident]

Common schemas are handled by `_fastpath`; this module is the general
recursive-descent parser, and the only source of parse errors.
"""

from __future__ import annotations

import re

from customop.schema._base import build
from customop.schema._fastpath import fast_parse
from customop.schema._lexer import Cursor
from customop.schema._model import Argument, FunctionSchema, OperatorName, Return, check_overload_name
from customop.schema._type_parser import parse_default, parse_type

__all__ = ["parse_operator_name", "parse_schema", "parse_schema_or_name"]

_IDENT = re.compile(r"[A-Za-z_]\w*")


def _slow_argument(cur: Cursor, kwarg_only: bool) -> Argument:
    tp = parse_type(cur)
    name = cur.ident("an argument name after the type")
    default = parse_default(cur, tp, name) if cur.accept("=") else None
    values = {"name": name, "type": tp, "default": default, "kwarg_only": kwarg_only}
    return build(Argument, values)


def _arguments(cur: Cursor, strict: bool) -> tuple[tuple[Argument, ...], bool]:
    args: list[Argument] = []
    names: set[str] = set()
    is_vararg = kwarg_only = star_seen = False
    if cur.accept(")"):
        return tuple(args), False
    while True:
        cur.skip()
        start = cur.pos
        if is_vararg:
            cur.expected("')'", "'...' must be the last argument.")
        if cur.accept("..."):
            is_vararg = True
        elif cur.accept("*"):
            if star_seen and strict:
                cur.fail("'*' appears twice", "Write '*' once, before the keyword-only arguments.", at=start)
            kwarg_only = star_seen = True
        else:
            arg = _slow_argument(cur, kwarg_only)
            if arg.name in names and strict:
                at = cur.text.rfind(arg.name, start, cur.pos)
                cur.fail(f"argument name {arg.name!r} appears twice", "Give each argument a unique name.", at=at)
            names.add(arg.name)
            args.append(arg)
        if cur.accept(")"):
            return tuple(args), is_vararg
        cur.expect(",", "Separate arguments with ',' and close the list with ')'.")


def _one_return(cur: Cursor) -> Return:
    tp = parse_type(cur)
    cur.skip()
    found = _IDENT.match(cur.text, cur.pos)
    name = None
    if found is not None:
        name = found.group()
        cur.pos = found.end()
    return build(Return, {"name": name, "type": tp})


def _returns(cur: Cursor) -> tuple[tuple[Return, ...], bool]:
    if cur.accept("..."):
        return (), True
    if not cur.accept("("):
        return (_one_return(cur),), False
    returns: list[Return] = []
    if cur.accept(")"):
        return (), False
    while True:
        if cur.accept("..."):
            cur.expect(")", "'...' must be the last return.")
            return tuple(returns), True
        returns.append(_one_return(cur))
        if cur.accept(")"):
            return tuple(returns), False
        cur.expect(",", "Separate returns with ',' and close the list with ')'.")


def _operator_name(cur: Cursor) -> OperatorName:
    first = cur.ident("an operator name like 'mylib::my_op'")
    namespace, name = "", first
    if cur.accept("::"):
        namespace, name = first, cur.ident("an operator name after '::'")
    overload = ""
    if cur.accept("."):
        cur.skip()
        start = cur.pos
        overload = cur.ident("an overload name after '.'")
        problem = check_overload_name(overload)
        if problem:
            cur.fail(f"illegal overload name {overload!r}: {problem}", at=start)
    return build(OperatorName, {"namespace": namespace, "name": name, "overload": overload})


def _schema_after_name(cur: Cursor, name: OperatorName | None, strict: bool) -> FunctionSchema:
    arguments, is_vararg = _arguments(cur, strict)
    cur.skip()
    if cur.at_end():
        cur.fail("the schema has no return type", "Add '-> ReturnType' after ')' (or '-> ()' for none).")
    cur.expect("->", "A schema is 'name(args) -> returns'.")
    returns, is_varret = _returns(cur)
    if not cur.at_end():
        cur.expected("the end of the schema")
    values = {
        "name": name,
        "arguments": arguments,
        "returns": returns,
        "is_vararg": is_vararg,
        "is_varret": is_varret,
    }
    return build(FunctionSchema, values)


def parse_schema_or_name(text: str, *, strict: bool = True) -> FunctionSchema | OperatorName:
    """Parse a schema, or a bare operator name when the text stops after the name."""
    schema = fast_parse(text)
    if schema is not None:
        return schema
    cur = Cursor(text, "parse_schema")
    name = None if cur.peek() == "(" else _operator_name(cur)
    if name is not None and cur.at_end():
        return name
    cur.expect("(", "A schema is 'name(args) -> returns'.")
    return _schema_after_name(cur, name, strict)


def parse_schema(text: str, *, strict: bool = True) -> FunctionSchema:
    """Parse schema text such as ``"mylib::add(Tensor x, Tensor y) -> Tensor"``.

    Raises `SchemaParseError` (a `ValueError`) quoting the text with a caret at
    the offending column. The name is optional: ``"(Tensor x) -> Tensor"`` parses
    to a schema with ``name=None``.

    ``strict=False`` also accepts the two things torch's parser lets through
    and customop's model forbids: an argument name used twice (torch 2.13
    ships one such schema, ``static_runtime::clamp_nan_to_num``) and a second
    ``*``. Such a schema is for reading only: `Dispatcher.register_def` refuses it.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_schema: expected schema text (a str), got {text!r}.")
    result = parse_schema_or_name(text, strict=strict)
    if isinstance(result, OperatorName):
        Cursor(text, "parse_schema").fail(
            f"{text.strip()!r} is an operator name, not a schema",
            "Add '(args) -> returns', or use parse_operator_name for a bare name.",
            at=len(text),
        )
    return result


def parse_operator_name(text: str) -> OperatorName:
    """Parse ``"ns::name"`` or ``"ns::name.overload"``."""
    if not isinstance(text, str):
        raise TypeError(f"parse_operator_name: expected a str, got {text!r}.")
    cur = Cursor(text, "parse_operator_name")
    name = _operator_name(cur)
    if not cur.at_end():
        cur.expected("the end of the operator name")
    return name

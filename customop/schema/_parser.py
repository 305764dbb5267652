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

import functools
import re

from customop.schema._base import build
from customop.schema._default_parser import parse_default
from customop.schema._fastpath import fast_parse
from customop.schema._lexer import Cursor
from customop.schema._model import (
    Argument,
    FunctionSchema,
    OperatorName,
    Return,
    check_overload_name,
)
from customop.schema._type_parser import parse_type

__all__ = ["parse_operator_name", "parse_schema", "parse_schema_or_name"]

# NOTE: the patterns compile on the first parse, as the lexer's (see its NOTE).
_IDENT: re.Pattern[str]
_TYPE_AFTER_COLON: re.Pattern[str]
# The common spellings, 'ns::name' and 'ns::name.overload', without the cursor
# machinery (a third of the cost); anything else, errors included, is parsed.
_PLAIN_NAME: re.Pattern[str]
_compiled = False


def _compile() -> None:
    global _IDENT, _TYPE_AFTER_COLON, _PLAIN_NAME, _compiled  # noqa: PLW0603 -- see the NOTE
    _IDENT = re.compile(r"[A-Za-z_]\w*", re.ASCII)
    _TYPE_AFTER_COLON = re.compile(r"\s*([A-Za-z_]\w*)", re.ASCII)
    _PLAIN_NAME = re.compile(
        r"([A-Za-z_][A-Za-z0-9_]*)::([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?"
    )
    _compiled = True  # last: another thread may be reading the flag


_ARROW_TYPOS = frozenset({"'=>'", "':'", "'-'", "'>'", "'='", "'→'"})
_STRICT_ONLY = "(or pass strict=False to read it as torch does)"


def _slow_argument(cur: Cursor, kwarg_only: bool) -> tuple[Argument, int]:
    """An argument, and where its name starts."""
    cur.skip()
    start = cur.pos
    tp = parse_type(cur)
    cur.skip()
    found = _IDENT.match(cur.text, cur.pos)
    if found is None:
        type_text = cur.text[start : cur.pos].rstrip()
        if cur.peek() == ":":
            after_colon = _TYPE_AFTER_COLON.match(cur.text, cur.pos + 1)
            meant = after_colon.group(1) if after_colon else "Type"
            fix = f"The type comes first: write '{meant} {type_text}', not '{type_text}: {meant}'."
        else:
            fix = f"Each argument is written 'Type name', like '{type_text} x'."
        if cur.peek().isdigit():
            fix = "Names start with a letter or '_'. " + fix
        cur.expected(f"an argument name after {type_text!r}", fix)
    name = found.group()
    cur.pos = found.end()
    default = parse_default(cur, tp, name) if cur.accept("=") else None
    values = {"name": name, "type": tp, "default": default, "kwarg_only": kwarg_only}
    return build(Argument, values), found.start()


def _separator(cur: Cursor, after: str, kind: str) -> None:
    """The ',' between list items, with help when the closing ')' is missing."""
    if cur.accept(","):
        return
    if cur.at_end() or cur.text.startswith("->", cur.pos):
        where = "before '->'" if not cur.at_end() else "at the end"
        cur.fail(f"missing ')' at the end of the {kind} list", f"Add ')' {where}.")
    cur.expected(
        f"',' or ')' after {after}", f"Separate {kind}s with ',' and close the list with ')'."
    )


def _list_item_start(cur: Cursor, kind: str, is_var: bool) -> None:
    """Fail on an item after '...' or a trailing ',' (the cursor is just after a ',')."""
    comma = cur.pos - 1
    if cur.peek() == ")":
        cur.fail(f"trailing ',' in the {kind} list", "Remove the ',' before ')'.", at=comma)
    if is_var:
        cur.fail(
            f"{'an' if kind == 'argument' else 'a'} {kind} follows '...'",
            f"'...' stands for any further {kind}s, so it must come last. "
            f"Move '...' to the end of the {kind} list.",
        )


def _arguments(cur: Cursor, strict: bool) -> tuple[tuple[Argument, ...], bool]:
    args: list[Argument] = []
    names: set[str] = set()
    is_vararg = kwarg_only = star_seen = False
    if cur.accept(")"):
        return tuple(args), False
    while True:
        cur.skip()
        start = cur.pos
        if args or is_vararg or star_seen:
            _list_item_start(cur, "argument", is_vararg)
        if cur.accept("..."):
            is_vararg = True
            last = "'...'"
        elif cur.accept("*"):
            if star_seen and strict:
                cur.fail(
                    "'*' appears twice",
                    "Every argument after the first '*' is already keyword-only. "
                    f"Remove this '*' {_STRICT_ONLY}.",
                    at=start,
                )
            kwarg_only = star_seen = True
            last = "'*'"
        else:
            arg, name_at = _slow_argument(cur, kwarg_only)
            if arg.name in names and strict:
                cur.fail(
                    f"argument name {arg.name!r} appears twice",
                    "Calls bind arguments by name, so names must be unique. "
                    f"Rename one of them {_STRICT_ONLY}.",
                    at=name_at,
                )
            names.add(arg.name)
            args.append(arg)
            last = f"argument {arg.name!r}"
        if cur.accept(")"):
            return tuple(args), is_vararg
        _separator(cur, last, "argument")


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
    if cur.at_end():
        cur.fail(
            "missing return type after '->'",
            "Write the return type, like '-> Tensor', or '-> ()' when the op returns nothing.",
        )
    if cur.accept("..."):
        return (), True
    if not cur.accept("("):
        return (_one_return(cur),), False
    returns: list[Return] = []
    if cur.accept(")"):
        return (), False
    is_varret = False
    while True:
        if returns or is_varret:
            _list_item_start(cur, "return", is_varret)
        if cur.accept("..."):
            is_varret = True
            last = "'...'"
        else:
            returns.append(_one_return(cur))
            last = "a return"
        if cur.accept(")"):
            return tuple(returns), is_varret
        _separator(cur, last, "return")


def _operator_name(cur: Cursor) -> OperatorName:
    cur.skip()
    if cur.text.startswith("::", cur.pos):
        cur.fail("missing namespace before '::'", "Operator names look like 'mylib::my_op'.")
    first = cur.ident("an operator name like 'mylib::my_op'")
    namespace, name = "", first
    if cur.accept("::"):
        namespace = first
        name = cur.ident(f"an operator name after '{first}::'", "Write 'mylib::my_op'.")
    overload = ""
    qualified = f"{namespace}::{name}" if namespace else name
    if cur.accept("."):
        cur.skip()
        start = cur.pos
        overload = cur.ident(
            f"an overload name after '{qualified}.'", "Write 'ns::name.overload', or drop the '.'."
        )
        problem = check_overload_name(overload)
        if problem:
            fix = (
                f"Write {qualified!r} for the default overload."
                if overload == "default"
                else "Choose a name that does not start with '__'."
            )
            cur.fail(
                f"illegal overload name {overload!r}",
                f"{problem[0].upper()}{problem[1:]}. {fix}",
                at=start,
            )
    return build(OperatorName, {"namespace": namespace, "name": name, "overload": overload})


def _arrow(cur: Cursor) -> None:
    if cur.accept("->"):
        return
    if cur.at_end():
        cur.fail(
            "missing '->' and the return type after the argument list",
            "Every schema says what the op returns. "
            "Add '-> Tensor', or '-> ()' when the op returns nothing.",
        )
    found = cur.found()
    if found in _ARROW_TYPOS:
        cur.expected("'->' after the argument list", f"Write '->' instead of {found}.")
    if cur.peek() == "(" or _IDENT.match(cur.text, cur.pos):
        cur.fail(
            "missing '->' between the arguments and the return type",
            f"A schema is 'name(args) -> returns'. Insert '->' before {found}.",
        )
    cur.expected("'->' after the argument list", "A schema is 'name(args) -> returns'.")


def _end(cur: Cursor) -> None:
    if cur.at_end():
        return
    found = cur.found()
    if found == "','":
        cur.fail(
            "unexpected ',' after the return type",
            "Several returns go in parentheses, like '-> (Tensor, Tensor)'.",
        )
    if found == "')'":
        cur.fail("unexpected ')' after the returns", "It closes nothing. Remove it.")
    cur.fail(
        f"unexpected {found} after the returns",
        "A schema ends with its returns: '-> Type' or '-> Type name'. Remove the extra text.",
    )


def _schema_after_name(cur: Cursor, name: OperatorName | None, strict: bool) -> FunctionSchema:
    arguments, is_vararg = _arguments(cur, strict)
    _arrow(cur)
    returns, is_varret = _returns(cur)
    _end(cur)
    values = {
        "name": name,
        "arguments": arguments,
        "returns": returns,
        "is_vararg": is_vararg,
        "is_varret": is_varret,
    }
    return build(FunctionSchema, values)


def _parse_general(text: str, strict: bool, api: str) -> FunctionSchema | OperatorName:
    """The general parser alone (the fast path's tests compare against it)."""
    if not _compiled:
        _compile()
    cur = Cursor(text, api)
    if cur.at_end():
        cur.fail("empty schema text", "Write a schema like 'mylib::my_op(Tensor x) -> Tensor'.")
    name = None if cur.peek() == "(" else _operator_name(cur)
    if name is not None and cur.at_end():
        return name
    if not cur.accept("("):
        cur.expected(
            f"'(' after the operator name {str(name)!r}",
            "A schema is 'ns::name.overload(args) -> returns'.",
        )
    return _schema_after_name(cur, name, strict)


def _parse(text: object, strict: bool, api: str) -> FunctionSchema | OperatorName:
    if not isinstance(text, str):
        raise TypeError(f"{api}: expected schema text (a str), got {text!r}.")
    schema = fast_parse(text)
    if schema is not None:
        return schema
    return _parse_general(text, strict, api)


def parse_schema_or_name(text: str, *, strict: bool = True) -> FunctionSchema | OperatorName:
    """Parse a schema, or a bare operator name when the text stops after the name.

    Args:
        text: a schema, or an operator name.
        strict: as for `parse_schema`.

    Returns:
        The schema, or the `OperatorName`.

    Raises:
        SchemaParseError: the text is neither.
    """
    return _parse(text, strict, "parse_schema_or_name")


def parse_schema(text: str, *, strict: bool = True) -> FunctionSchema:
    """Parse schema text such as ``"mylib::add(Tensor x, Tensor y) -> Tensor"``.

    Raises `SchemaParseError` (a `ValueError`) quoting the text with a caret at
    the offending column. The name is optional: ``"(Tensor x) -> Tensor"`` parses
    to a schema with ``name=None``.

    ``strict=False`` also accepts the two things torch's parser lets through
    and customop's model forbids: an argument name used twice (torch 2.13
    ships one such schema, ``static_runtime::clamp_nan_to_num``) and a second
    ``*``. Such a schema is for reading only: `Dispatcher.register_def` refuses it.

    Args:
        text: the schema text.
        strict: refuse what customop's model forbids (see above).

    Returns:
        The schema; ``str(schema)`` prints torch's canonical text.

    Raises:
        SchemaParseError: the text does not follow the grammar.

    Examples:
        >>> from customop import parse_schema
        >>> schema = parse_schema("mylib::add(Tensor x, Tensor y, *, float alpha=1.0) -> Tensor")
        >>> print(schema)
        mylib::add(Tensor x, Tensor y, *, float alpha=1.) -> Tensor
        >>> [arg.name for arg in schema.kwarg_only_arguments]
        ['alpha']
    """
    result = _parse(text, strict, "parse_schema")
    if isinstance(result, OperatorName):
        Cursor(text, "parse_schema").fail(
            f"{text.strip()!r} is an operator name, not a schema",
            "A schema also lists the arguments and returns. Add '(args) -> returns', "
            "or call parse_operator_name for a bare name.",
            at=len(text),
        )
    return result


def parse_operator_name(text: str) -> OperatorName:
    """Parse ``"ns::name"`` or ``"ns::name.overload"``.

    Args:
        text: the name.

    Returns:
        The parsed name.

    Raises:
        SchemaParseError: the text is not an operator name.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_operator_name: expected a str, got {text!r}.")
    # Names are looked up far more often than they are new (every registration
    # and lookup by name parses one); the result is immutable, so memoize it.
    return _parse_operator_name(text)


@functools.lru_cache(maxsize=4096)
def _parse_operator_name(text: str) -> OperatorName:
    if not _compiled:
        _compile()
    plain = _PLAIN_NAME.fullmatch(text)
    if plain is not None:
        namespace, base, overload = plain.groups("")
        if check_overload_name(overload) is None:
            values = {"namespace": namespace, "name": base, "overload": overload}
            return build(OperatorName, values)
    cur = Cursor(text, "parse_operator_name")
    if cur.at_end():
        cur.fail("empty operator name", "Write a name like 'mylib::my_op' or 'mylib::my_op.out'.")
    name = _operator_name(cur)
    if not cur.at_end():
        cur.expected(
            "the end of the operator name",
            "An operator name is 'ns::name' or 'ns::name.overload'; "
            "parse a whole schema with parse_schema.",
        )
    return name

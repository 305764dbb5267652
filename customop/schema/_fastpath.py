"""The fast path of `parse_schema`: schemas of the common shape, with no regex per argument.

``fast_parse`` splits ``name(<args>) -> <returns>`` at ``(`` and ``) -> ``, the
arguments at ``", "``, and looks each piece up in an intern table of the
(immutable, so safely shared) `Argument` objects it parses to; return lists
are interned the same way. Real schema sets repeat heavily (``Tensor self``,
``bool keepdim=False``, ``Tensor(a!) out``), so most arguments cost one dict
hit. A piece seen for the first time must match one whole-argument pattern,
which a piece cut from the middle of ``Dict(str, t)``, ``[0, 1]`` or a string
cannot, so a wrong split can never pass. On anything else, including every
error, ``fast_parse`` returns None and the general parser in `_parser` starts
over, so all error messages come from one place. The tables are bounded.
"""

from __future__ import annotations

import re

from customop.schema._base import build
from customop.schema._default_parser import parse_default
from customop.schema._defaults import Default
from customop.schema._lexer import Cursor
from customop.schema._model import Argument, FunctionSchema, OperatorName, Return
from customop.schema._type_parser import parse_type
from customop.schema._types import SchemaType

__all__ = ["clear_caches", "fast_parse"]

# ASCII only: `\w` would let non-ASCII names past the general parser's rules.
# Defaults exclude `#`, which starts a comment for the general parser.
_TYPE = r"[A-Za-z_][\w.]*(?:\([^()]*\)){0,2}(?:\[\d*\](?:\([^()]*\))?|\?|!)*"
_DEFAULT = r"""[^\s,()\[\]"'#]+|\[[^\]"'#]*\]|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'"""
_ITEM = rf"{_TYPE}(?: [A-Za-z_]\w*)?"
# NOTE: the patterns are compiled by the first `fast_parse`, not at import:
# compiling them is a visible share of `import customop` (issue #12), and
# programs whose ops infer their schemas never parse one.
_NAME: re.Pattern[str]
_ARG: re.Pattern[str]
_RETURNS: re.Pattern[str]
_RETURN_ITEM: re.Pattern[str]
_compiled = False


def _compile() -> None:
    global _NAME, _ARG, _RETURNS, _RETURN_ITEM, _compiled  # noqa: PLW0603 -- see the NOTE
    _NAME = re.compile(
        r"(?:([A-Za-z_]\w*)::)?([A-Za-z_]\w*)(?:\.(?!default$|__)([A-Za-z_]\w*))?", re.ASCII
    )
    _ARG = re.compile(rf"({_TYPE}) ([A-Za-z_]\w*)(?:=({_DEFAULT}))?", re.ASCII)
    _RETURNS = re.compile(rf"({_ITEM})|\(((?:{_ITEM}, )*{_ITEM})?\)", re.ASCII)
    _RETURN_ITEM = re.compile(rf"({_TYPE})(?: ([A-Za-z_]\w*))?", re.ASCII)
    _compiled = True  # last: another thread may be reading the flag


_LIMIT = 16384
_LONG = 4096  # torch's longest schema has about 700 characters

_types: dict[str, SchemaType] = {}
_defaults: dict[tuple[str, str], Default] = {}
_arguments: dict[tuple[str, bool], Argument] = {}
_returns: dict[str, tuple[Return, ...]] = {}


def clear_caches() -> None:
    """Forget every interned object (benchmarks use it to time cold parses)."""
    for table in (_types, _defaults, _arguments, _returns):
        table.clear()


def _remember(table: dict, key: object, value: object) -> None:  # type: ignore[type-arg]
    if len(table) < _LIMIT:
        table[key] = value


def _parse_whole(text: str, parse: object, *args: object) -> object:
    cur = Cursor(text, "parse_schema")
    try:
        value = parse(cur, *args)  # type: ignore[operator]
    except ValueError:
        return None
    return value if cur.at_end() else None


def _type(text: str) -> SchemaType | None:
    tp = _types.get(text)
    if tp is None:
        tp = _parse_whole(text, parse_type)  # type: ignore[assignment]
        if tp is not None:
            _remember(_types, text, tp)
    return tp


def _argument(piece: str, kwarg_only: bool) -> Argument | None:
    found = _ARG.fullmatch(piece)
    if found is None:
        return None
    type_text, name, default_text = found.groups()
    tp = _type(type_text)
    if tp is None:
        return None
    default = None
    if default_text is not None:
        default = _defaults.get((type_text, default_text))
        if default is None:
            default = _parse_whole(default_text, parse_default, tp, name)  # type: ignore[assignment]
            if default is None:
                return None
            _remember(_defaults, (type_text, default_text), default)
    arg = build(Argument, {"name": name, "type": tp, "default": default, "kwarg_only": kwarg_only})
    _remember(_arguments, (piece, kwarg_only), arg)
    return arg


def _return_list(key: str) -> tuple[Return, ...] | None:
    found = _RETURNS.fullmatch(key)
    if found is None:
        return None
    single, several = found.groups()
    text = single if single is not None else several or ""
    items = [m.groups() for m in _RETURN_ITEM.finditer(text)]
    if ", ".join(t + (f" {n}" if n else "") for t, n in items) != text:
        return None  # a type with a comma inside, like Dict(str, t): general path
    returns = []
    for type_text, name in items:
        tp = _type(type_text)
        if tp is None:
            return None
        returns.append(build(Return, {"name": name, "type": tp}))
    result = tuple(returns)
    _remember(_returns, key, result)
    return result


def _balanced(pieces: list[str]) -> list[str]:
    """Re-join pieces cut inside brackets (``Dict(str, t) d``, ``int[2] x=[0, 1]``)."""
    if all(p.count("(") == p.count(")") and p.count("[") == p.count("]") for p in pieces):
        return pieces
    joined: list[list[str]] = []  # joined once at the end: `+=` per piece is quadratic
    depth = 0
    for piece in pieces:
        if depth > 0:
            joined[-1].append(piece)
        else:
            joined.append([piece])
        depth += piece.count("(") - piece.count(")") + piece.count("[") - piece.count("]")
    return [", ".join(parts) for parts in joined]


def _name(head: str) -> OperatorName | None:
    found = _NAME.fullmatch(head)
    if found is None:
        return None
    namespace, base, overload = found.groups()
    values = {"namespace": namespace or "", "name": base, "overload": overload or ""}
    return build(OperatorName, values)


def fast_parse(text: str) -> FunctionSchema | None:
    """The schema, or None when the text needs the general parser."""
    if not _compiled:
        _compile()
    if len(text) > _LONG:
        return None  # splitting pieces costs more than it saves; the general path is linear
    opening = text.find("(")
    closing = text.find(") -> ", opening)
    if opening <= 0 or closing < 0:
        return None
    name = _name(text[:opening])
    if name is None:
        return None
    args: list[Argument] = []
    if closing > opening + 1:
        kwarg_only, cache, names = False, _arguments, set()
        for piece in _balanced(text[opening + 1 : closing].split(", ")):
            if piece == "*" and not kwarg_only:
                kwarg_only = True
                continue
            arg = cache.get((piece, kwarg_only)) or _argument(piece, kwarg_only)
            if arg is None or arg.name in names:
                return None
            names.add(arg.name)
            args.append(arg)
        if kwarg_only and (not args or not args[-1].kwarg_only):
            return None  # a trailing '*' prints away; let the general parser decide
    key = text[closing + 5 :]
    returns = _returns.get(key) or _return_list(key)
    if returns is None:
        return None
    values = {
        "name": name,
        "arguments": tuple(args),
        "returns": returns,
        "is_vararg": False,
        "is_varret": False,
    }
    return build(FunctionSchema, values)

"""Recursive-descent parsing of schema types, alias annotations and defaults.

This is the general path; `_parser` first tries a one-regex fast path per
argument and comes here for anything it does not recognise, so every error
message is produced here, with the caret in the right place.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from customop.schema._base import build
from customop.schema._defaults import (
    ENUM_DEFAULTS,
    SCALAR_TYPE_CODES,
    Default,
    check_default,
)
from customop.schema._lexer import Cursor
from customop.schema._types import (
    BASE_TYPE_NAMES,
    AliasInfo,
    BaseType,
    ClassType,
    DictType,
    FutureType,
    ListType,
    OptionalType,
    SchemaType,
    TupleType,
    UnionType,
    VarType,
    suggest_type_name,
)

__all__ = ["parse_default", "parse_type"]

#: C++ and Python spellings users write by habit, and the schema type they mean.
_HABITS: dict[str, str] = {
    "double": "float", "int64_t": "int", "int32_t": "int", "long": "int", "size_t": "int",
    "integer": "int", "string": "str", "boolean": "bool", "tensor": "Tensor",
    "scalar": "Scalar", "symint": "SymInt", "dtype": "ScalarType", "device": "Device",
    "list": "T[]", "List": "T[]", "Optional": "T?", "optional": "T?", "Tuple": "(A, B)",
    "tuple": "(A, B)", "dict": "Dict(K, V)", "Union": "Union(A, B)",
}  # fmt: skip
_LOWER_TYPE_NAMES = sorted(n for n in BASE_TYPE_NAMES if n[0].islower())
_WRAPPERS = frozenset({"Future", "Await", "RRef"})
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?j?")
_SIZE = re.compile(r"\d+")
_STRING = re.compile(r""""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'""")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|(.))", re.DOTALL)
_FLOAT_TYPES = frozenset({"float", "SymFloat"})


def _alias_sets(cur: Cursor) -> tuple[str, ...]:
    sets = []
    while True:
        sets.append("*" if cur.accept("*") else cur.ident("an alias set name like 'a' or '*'"))
        if not cur.accept("|"):
            return tuple(sets)


def parse_alias(cur: Cursor) -> AliasInfo | None:
    """``(a)``, ``(a!)``, ``(a! -> a|b)``, ``(*)`` or the bare ``!``; None if absent."""
    if cur.accept("!"):
        return build(AliasInfo, {"before": (), "after": (), "is_write": True})
    if not cur.accept("("):
        return None
    before = _alias_sets(cur)
    is_write = cur.accept("!")
    after = _alias_sets(cur) if cur.accept("->") else before
    cur.expect(")", "Alias annotations look like (a), (a!) or (a -> *).")
    return build(AliasInfo, {"before": before, "after": after, "is_write": is_write})


def _type_list(cur: Cursor, closing: str = ")") -> tuple[SchemaType, ...]:
    items = [parse_type(cur)]
    while cur.accept(","):
        items.append(parse_type(cur))
    cur.expect(closing)
    return tuple(items)


def _reject_habit(cur: Cursor, name: str, start: int) -> None:
    meant = _HABITS.get(name)
    if meant is None and name[0].islower():
        close = difflib.get_close_matches(name, _LOWER_TYPE_NAMES, n=1, cutoff=0.75)
        meant = close[0] if close else None
    elif meant is None:
        meant = suggest_type_name(name) or ""
        if not meant:
            cur.fail(
                f"unknown type {name!r}",
                "Schema types are Tensor, int, SymInt, float, bool, str, Scalar, "
                "ScalarType, Device, T?, T[], Dict(K, V), ...; see the schema docs.",
                at=start,
            )
    if meant:
        cur.fail(f"unknown type {name!r}", f"Did you mean {meant!r}?", at=start)


def _named_type(cur: Cursor, name: str, start: int) -> SchemaType:
    if name == "Dict":
        cur.expect("(", "Write Dict(K, V).")
        key = parse_type(cur)
        cur.expect(",", "Write Dict(K, V).")
        value = parse_type(cur)
        cur.expect(")", "Write Dict(K, V).")
        alias = parse_alias(cur)
        return build(DictType, {"kind": "dict", "key": key, "value": value, "alias": alias})
    if name in _WRAPPERS:
        cur.expect("(", f"Write {name}(T).")
        elem = parse_type(cur)
        cur.expect(")", f"Write {name}(T).")
        return build(FutureType, {"kind": "future", "wrapper": name, "elem": elem})
    if name == "Union" and cur.peek() == "(":
        cur.accept("(")
        elems = _type_list(cur)
        if len(elems) < 2:
            cur.fail("a Union needs at least two member types", "Write Union(A, B).", at=start)
        return build(UnionType, {"kind": "union", "elems": elems, "alias": parse_alias(cur)})
    if name == "__torch__":
        while cur.accept("."):
            name += "." + cur.ident("a class name")
        if name.count(".") < 1:
            cur.expected("'.' in a __torch__ class name", "Write __torch__.torch.classes.ns.Name.")
        return build(ClassType, {"kind": "class", "qualified_name": name})
    if name == "None":
        name = "NoneType"
    if name in BASE_TYPE_NAMES:
        return build(BaseType, {"kind": "base", "name": name, "alias": parse_alias(cur)})
    _reject_habit(cur, name, start)
    return build(VarType, {"kind": "var", "name": name, "alias": parse_alias(cur)})


def parse_type(cur: Cursor) -> SchemaType:
    """A full type with its postfix ``?``, ``[]``, ``[N]`` and list alias annotations."""
    cur.skip()
    start = cur.pos
    tp: SchemaType
    if cur.accept("("):
        tp = build(TupleType, {"kind": "tuple", "elems": () if cur.accept(")") else _type_list(cur)})
    else:
        tp = _named_type(cur, cur.ident("a type"), start)
    while True:
        if cur.accept("?"):
            tp = build(OptionalType, {"kind": "optional", "elem": tp})
        elif cur.accept("["):
            found = cur.match(_SIZE)
            cur.expect("]", "List types are written T[] or T[N].")
            size = int(found.group()) if found else None
            alias = parse_alias(cur)
            tp = build(ListType, {"kind": "list", "elem": tp, "size": size, "alias": alias})
        else:
            return tp


def _unescape(cur: Cursor, body: str, start: int) -> str:
    def replace(found: re.Match[str]) -> str:
        if found.group(1):
            return chr(int(found.group(1), 8))
        char = found.group(2)
        if char in "\\'\"":
            return char
        if char in _ESCAPES:
            return _ESCAPES[char]
        cur.fail(f"unknown escape '\\{char}' in a string default", at=start + found.start())

    return _ESCAPE.sub(replace, body)


def _scalar_literal(cur: Cursor) -> Any:
    cur.skip()
    start = cur.pos
    quoted = cur.match(_STRING)
    if quoted is not None:
        return _unescape(cur, quoted.group()[1:-1], start + 1)
    negative = cur.accept("-")
    number = cur.match(_NUMBER)
    if number is not None:
        text = number.group()
        value: Any = complex(text) if text.endswith("j") else (
            float(text) if any(c in text for c in ".eE") else int(text)
        )  # fmt: skip
        return -value if negative else value
    word = cur.ident("a default value (a number, string, True, False, None or [...])")
    if word in ("inf", "nan"):
        return -float(word) if negative else float(word)
    if negative:
        cur.fail(f"expected a number after '-' but found {word!r}", at=start)
    constants: dict[str, Any] = {"True": True, "False": False, "None": None}
    if word in constants:
        return constants[word]
    if word in ENUM_DEFAULTS or word in SCALAR_TYPE_CODES:
        return ENUM_DEFAULTS.get(word, SCALAR_TYPE_CODES.get(word))
    cur.fail(
        f"invalid default value {word!r}",
        "Identifier defaults are dtype names (long, float32, ...), strided, Mean and "
        "contiguous_format; quote strings, like \"mean\".",
        at=start,
    )


def _coerce(value: Any, tp: SchemaType) -> Any:
    """Apply torch's conversions: an int default of a float type is a float,
    a scalar default of a fixed-size list ``int[2] x=1`` repeats."""
    # torch converts only a plain `float`, so `float? x=1` keeps printing as 1.
    inner = tp.elem if isinstance(tp, OptionalType) else tp
    if isinstance(inner, ListType):
        if not isinstance(value, tuple) and value is not None and inner.size is not None:
            return (value,) * inner.size
        if isinstance(value, tuple):
            return tuple(_coerce(v, inner.elem) for v in value)
    is_float = isinstance(tp, BaseType) and tp.name in _FLOAT_TYPES
    if is_float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def parse_default(cur: Cursor, tp: SchemaType, arg_name: str) -> Default:
    """A default literal, converted to ``tp`` and checked to fit it."""
    cur.skip()
    start = cur.pos
    if cur.accept("["):
        items: list[Any] = []
        if not cur.accept("]"):
            items.append(_scalar_literal(cur))
            while cur.accept(","):
                items.append(_scalar_literal(cur))
            cur.expect("]", "List defaults look like [0, 1].")
        value: Any = tuple(items)
    else:
        value = _scalar_literal(cur)
    value = _coerce(value, tp)
    problem = check_default(value, tp)
    if problem is not None:
        cur.fail(f"default of argument {arg_name!r} does not fit its type {tp}: {problem}", at=start)
    spelling = cur.text[start : cur.pos].rstrip()
    return build(Default, {"value": value, "spelling": spelling})

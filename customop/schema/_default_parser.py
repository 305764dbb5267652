"""Parsing default values: numbers, strings with C escapes, names, lists.

A default is read, converted the way torch converts it (``float x=1`` is
``1.0``, ``int[2] x=1`` is ``[1, 1]``), checked to fit its type, and kept with
its spelling so that the source printer can give the text back.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

from customop.schema._base import build
from customop.schema._clip import clip
from customop.schema._defaults import (
    ENUM_DEFAULTS,
    INT64_MAX,
    INT64_MIN,
    SCALAR_TYPE_CODES,
    Default,
    check_default,
    coerce_default,
    format_value,
)
from customop.schema._lexer import Cursor
from customop.schema._types import BaseType, ListType, OptionalType, SchemaType

__all__ = ["parse_default"]

_REAL = r"(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|nan)"
# A real, an imaginary part (`2j`) or both (`0.+1.j`, torch's complex spelling); not
# followed by a word character, so `0x10`, `1_000` and `1e` are rejected whole.
# Hex integers (`0x2FFFFFF`, FBGEMM writes them) read to their value; torch 2.13 reads 0.
_NUMBER: re.Pattern[str]
# A list of plain integers, the one list default that gets long (`int[] x=[0, 1, ...]`):
# read by one regex and `int`, not element by element. Anything else, or any error,
# takes the general path, which has the messages.
_INT_LIST_BODY: re.Pattern[str]
_BAD_NUMBER: re.Pattern[str]
_HEX: re.Pattern[str]
_SURROGATE: re.Pattern[str]
_STRING: re.Pattern[str]
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_ESCAPE: re.Pattern[str]
# NOTE: the patterns are compiled by the first `parse_default`, not at import
# (as in `_fastpath`: a visible share of `import customop`, issue #12).
_compiled = False

_DEFAULT = "a default value (a number, string, True, False, None or [...])"
_ELEMENT = "a list element (a number, string, True, False or None)"
_LIST_FORM = "List defaults look like [0, 1]."
_CONSTANTS: dict[str, Any] = {"True": True, "False": False, "None": None}
_CONSTANT_HABITS = {"true": "True", "false": "False", "none": "None", "null": "None"}


def _compile() -> None:
    global _NUMBER, _INT_LIST_BODY, _BAD_NUMBER, _HEX  # noqa: PLW0603 -- see the NOTE
    global _SURROGATE, _STRING, _ESCAPE, _compiled  # noqa: PLW0603 -- see the NOTE
    _NUMBER = re.compile(rf"0[xX][0-9a-fA-F]+(?![\w.])|{_REAL}(?:[-+]{_REAL}j|j)?(?![\w.])")
    _INT_LIST_BODY = re.compile(r"[\s\d,-]*")
    _BAD_NUMBER = re.compile(r"[\w.]+")
    _HEX = re.compile(r"0[xX]")
    _SURROGATE = re.compile("[\ud800-\udfff]")
    _STRING = re.compile(r""""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'""")
    _ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|(.))", re.DOTALL)
    _compiled = True  # last: another thread may be reading the flag


#: What the defaults of each base type look like, for "does not fit" messages.
_LITERALS: dict[str, str] = {
    "int": "whole numbers like 0 or -1",
    "SymInt": "whole numbers like 0 or -1",
    "float": "numbers like 1.0, 1e-05 or -inf",
    "SymFloat": "numbers like 1.0, 1e-05 or -inf",
    "bool": "True or False",
    "SymBool": "True or False",
    "str": 'quoted strings like "mean"',
    "Device": 'quoted devices like "cpu"',
    "Scalar": "numbers like 1, 0.5 or 2j",
    "number": "numbers like 1, 0.5 or 2j",
    "complex": "numbers like 1.0 or 2j",
    "ScalarType": "dtype names like float32 or long",
    "Layout": "layout names like strided",
    "MemoryFormat": "memory formats like contiguous_format",
    "QScheme": "whole numbers (the qscheme's code)",
}


def _unescape(cur: Cursor, body: str, start: int) -> str:
    """C escapes; octal escapes are bytes, and the result is decoded as UTF-8 (as torch does)."""
    if "\\" not in body:
        return body
    out = bytearray()
    pos = 0
    for found in _ESCAPE.finditer(body):
        out += body[pos : found.start()].encode()
        pos = found.end()
        octal, char = found.groups()
        if octal:
            if int(octal, 8) > 0o377:
                cur.fail(
                    f"octal escape '\\{octal}' in a string default is out of range",
                    "An octal escape is one byte, \\000 to \\377.",
                    at=start + found.start(),
                )
            out.append(int(octal, 8))
        elif char in "\\'\"" or char in _ESCAPES:
            out += _ESCAPES.get(char, char).encode()
        else:
            cur.fail(
                f"unknown escape '\\{char}' in a string default",
                "Strings know the C escapes \\n, \\t, \\r, \\\\, \\\", \\' and octal like "
                "\\101. Write \\\\ for a backslash.",
                at=start + found.start(),
            )
    out += body[pos:].encode()
    try:
        return out.decode()
    except UnicodeDecodeError:
        cur.fail(
            "the octal escapes of a string default are not UTF-8",
            "Octal escapes stand for the UTF-8 bytes of a character, like \\303\\251 for 'é'. "
            "Write the character itself, or all of its bytes.",
            at=start - 1,
        )


def _number(cur: Cursor, text: str, start: int) -> Any:
    if text.lstrip("-")[1:2] in ("x", "X"):
        value = int(text, 16)
    elif text.endswith("j"):
        return complex(text)
    elif any(c in text for c in ".eEn"):  # `n`: inf, nan
        return float(text)
    elif len(text) > 20:  # checked before int(): Python refuses over 4,300 digits
        value = INT64_MAX + 1
    else:
        value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:
        cur.fail(
            f"the integer default {clip(text, 40)} is out of range",
            "Schema integers are 64-bit, -9223372036854775808 to 9223372036854775807. "
            "Use a smaller value, or a float.",
            at=start,
        )
    return value


def _scalar_literal(cur: Cursor, what: str, help_text: str = "") -> Any:
    cur.skip()
    start = cur.pos
    quoted = cur.match(_STRING)
    if quoted is not None:
        body = quoted.group()[1:-1]
        surrogate = _SURROGATE.search(body)
        if surrogate is not None:
            cur.fail(
                f"a string default holds the lone surrogate {surrogate.group()!r}",
                "Schema text is UTF-8, which cannot hold one, so the schema could not be "
                "printed. Write the whole character (a surrogate pair is one character in "
                "Python: '\\U0001f600', not '\\ud83d\\ude00').",
                at=start + 1 + surrogate.start(),
            )
        return _unescape(cur, body, start + 1)
    if cur.peek() in ("'", '"'):
        cur.fail(
            "unclosed string default",
            "A string ends with the quote it starts with, on the same line. "
            f"Add the closing {cur.peek()}.",
        )
    negative = cur.accept("-")
    number = cur.match(_NUMBER)
    if number is not None:
        return _number(cur, "-" + number.group() if negative else number.group(), start)
    if cur.peek() == "." or cur.peek().isdigit():
        bad = _BAD_NUMBER.match(cur.text, cur.pos)
        word = bad.group() if bad else cur.peek()
        cur.fail(
            f"invalid number {word!r}",
            "Numbers are written like 1, -2, 0x1F, 0.5, 1e-05, inf or 2j (no '_').",
            at=cur.pos,
        )
    if negative:
        cur.expected("a number after '-'", "Only numbers can be negative, like -1 or -inf.")
    word = cur.ident(what, help_text)
    if word in _CONSTANTS:
        return _CONSTANTS[word]
    if word in ENUM_DEFAULTS or word in SCALAR_TYPE_CODES:
        return ENUM_DEFAULTS.get(word, SCALAR_TYPE_CODES.get(word))
    if word in _CONSTANT_HABITS:
        cur.fail(
            f"unknown default value {word!r}", f"Did you mean {_CONSTANT_HABITS[word]!r}?", at=start
        )
    cur.fail(
        f"unknown default value {word!r}",
        "The names a default can be are True, False, None, dtype names (long, float32, ...), "
        f'strided, Mean and contiguous_format. Quote a string, like "{word}".',
        at=start,
    )


def _misfit_help(value: Any, tp: SchemaType, arg_name: str, *, element: bool = False) -> str:
    """Why a default (or one of its list elements) does not fit ``tp``, and what to write."""
    optional = isinstance(tp, OptionalType)
    inner = tp.elem if isinstance(tp, OptionalType) else tp
    if value is None and not optional:
        if element:
            return f"Only an optional type can be None. Make the element type '{tp}?'."
        return f"Only an optional type can default to None. Write '{tp}? {arg_name}=None'."
    if isinstance(inner, ListType) and not isinstance(value, tuple):
        return f"'{inner}' defaults are lists like [0, 1]. Write the list in brackets."
    forms = _LITERALS.get(inner.name) if isinstance(inner, BaseType) else None
    if forms is not None:
        change = "the element" if element else "the default"
        return f"'{inner}' values are {forms}. Change {change} or the type."
    if element:
        return f"'{inner}' has no literal values. Write an empty list [], or drop the default."
    if optional:
        return (
            f"'{inner}' has no literal values; '{tp}' can only default to None. "
            f"Write '{arg_name}=None'."
        )
    return (
        f"'{inner}' has no literal values; only an optional type can default to None. "
        f"Drop the default, or write '{inner}? {arg_name}=None'."
    )


def parse_default(cur: Cursor, tp: SchemaType, arg_name: str) -> Default:
    """A default literal, converted to ``tp`` and checked to fit it."""
    if not _compiled:
        _compile()
    cur.skip()
    start = cur.pos
    spans: list[tuple[int, int]] = []
    value: Any
    fast = _int_list(cur, tp)
    if fast is not None:
        return fast
    if cur.accept("["):
        items: list[Any] = []
        if not cur.accept("]"):
            while True:
                cur.skip()
                item_start = cur.pos
                items.append(_scalar_literal(cur, _ELEMENT, _LIST_FORM))
                spans.append((item_start, cur.pos))
                if cur.accept("]"):
                    break
                if not cur.accept(","):
                    cur.expected("',' or ']' in the list default", _LIST_FORM)
        value = tuple(items)
    else:
        value = _scalar_literal(cur, _DEFAULT, "Write a default after '=', or drop the '='.")
    value = coerce_default(value, tp)
    spelling = cur.text[start : cur.pos]
    if check_default(value, tp) is not None:
        _misfit(cur, value, tp, arg_name, start=start, spans=spans)
    if _HEX.search(spelling) and not isinstance(value, str):
        spelling = format_value(value)  # hex prints as decimal, the way torch prints ints
    return build(Default, {"value": value, "spelling": spelling})


def _int_list(cur: Cursor, tp: SchemaType) -> Default | None:
    """A default of plain integers read in one go, or None (nothing consumed)."""
    text, start = cur.text, cur.pos
    end = text.find("]", start)
    if not text.startswith("[", start) or end < 0:
        return None
    if _INT_LIST_BODY.fullmatch(text, start + 1, end) is None:
        return None
    try:  # int() takes the spaces around a number, and refuses '', '--1', '1-2'
        items = tuple(map(int, text[start + 1 : end].split(",")))
    except ValueError:
        return None
    if not INT64_MIN <= min(items) <= max(items) <= INT64_MAX:
        return None
    inner = tp.elem if isinstance(tp, OptionalType) else tp
    elem = inner.elem if isinstance(inner, ListType) else None
    if isinstance(elem, BaseType) and elem.name in ("int", "SymInt"):
        value: Any = items  # in range, so they fit: no check per element
    else:
        value = coerce_default(items, tp)
        if check_default(value, tp) is not None:
            return None
    cur.pos = end + 1
    return build(Default, {"value": value, "spelling": text[start : end + 1]})


def _misfit(
    cur: Cursor,
    value: Any,
    tp: SchemaType,
    arg_name: str,
    *,
    start: int,
    spans: list[tuple[int, int]],
) -> NoReturn:
    """Fail for a default that does not fit; the caret on the first bad list element."""
    inner = tp.elem if isinstance(tp, OptionalType) else tp
    if isinstance(inner, ListType) and isinstance(value, tuple) and len(spans) == len(value):
        for item, (item_start, item_end) in zip(value, spans, strict=True):
            if check_default((item,), inner) is not None:
                cur.fail(
                    f"element {cur.text[item_start:item_end]!r} of the default of argument "
                    f"{arg_name!r} does not fit the element type '{inner.elem}'",
                    _misfit_help(item, inner.elem, arg_name, element=True),
                    at=item_start,
                )
    spelling = cur.text[start : cur.pos]
    cur.fail(
        f"default {spelling!r} of argument {arg_name!r} does not fit its type '{tp}'",
        _misfit_help(value, tp, arg_name),
        at=start,
    )

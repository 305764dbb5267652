"""Default values: the model, the check that a default fits its type, and printing.

A default keeps its value (what the op receives) and the spelling it was
written with (``Mean``, ``1e-05``, ``'linear'``), so the canonical printer can
print it torch's C++ way and the source printer can give the text back.
Equality looks at the value only: ``eps=1e-05`` equals ``eps=1.0000000000000001e-05``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, Final

from pydantic import field_validator, model_validator
from pydantic_core import core_schema

from customop.exceptions import SchemaError
from customop.schema._base import Frozen
from customop.schema._clip import clip_repr
from customop.schema._types import BaseType, ListType, OptionalType, SchemaType

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler
    from pydantic_core import CoreSchema

__all__ = [
    "ENUM_DEFAULTS",
    "INT64_MAX",
    "INT64_MIN",
    "SCALAR_TYPE_CODES",
    "Default",
    "DefaultValue",
    "check_default",
    "coerce_default",
    "encodable",
    "format_value",
]

#: torch's ScalarType codes by dtype name (c10/core/ScalarType.h), for defaults like ``dtype=long``.
SCALAR_TYPE_CODES: dict[str, int] = {
    "uint8": 0, "int8": 1, "int16": 2, "short": 2, "int32": 3, "int": 3, "int64": 4, "long": 4,
    "float16": 5, "half": 5, "float32": 6, "float": 6, "float64": 7, "double": 7,
    "complex32": 8, "chalf": 8, "complex64": 9, "cfloat": 9, "complex": 9,
    "complex128": 10, "cdouble": 10, "bool": 11, "qint8": 12, "quint8": 13, "qint32": 14,
    "bfloat16": 15, "quint4x2": 16, "quint2x4": 17, "bits1x8": 18, "bits2x4": 19,
    "bits4x2": 20, "bits8": 21, "bits16": 22, "float8_e5m2": 23, "float8_e4m3fn": 24,
    "float8_e5m2fnuz": 25, "float8_e4m3fnuz": 26, "uint16": 27, "uint32": 28, "uint64": 29,
    "uint1": 30, "uint2": 31, "uint3": 32, "uint4": 33, "uint5": 34, "uint6": 35, "uint7": 36,
    "int1": 37, "int2": 38, "int3": 39, "int4": 40, "int5": 41, "int6": 42, "int7": 43,
    "float8_e8m0fnu": 44, "float4_e2m1fn_x2": 45,
}  # fmt: skip

#: Identifier defaults torch's parser reads as integers (besides dtype names).
ENUM_DEFAULTS: dict[str, int] = {
    "long": 4, "float": 6, "complex": 9,  # ScalarType, kept for backward compatibility
    "strided": 0,  # Layout
    "Mean": 1,  # Reduction
    "contiguous_format": 0,  # MemoryFormat
}  # fmt: skip

Scalar = bool | int | float | complex | str | None
DefaultValue = bool | int | float | complex | str | None | tuple[Scalar, ...]

_INT_LIKE = frozenset({"int", "SymInt", "ScalarType", "Layout", "MemoryFormat", "QScheme"})
_FLOAT_LIKE = frozenset({"float", "SymFloat"})
_NUMBER_LIKE = frozenset({"Scalar", "complex", "number"})
_OPEN = frozenset({"Any", "NoneType"})


def _encode(value: Any) -> Any:
    """JSON has no complex numbers, infinities or NaN: tag them."""
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    if isinstance(value, complex):
        return {"complex": [_encode(value.real), _encode(value.imag)]}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_decode(v) for v in value)
    if isinstance(value, dict) and value.keys() == {"complex"}:
        real, imag = value["complex"]
        return complex(_decode(real), _decode(imag))
    if isinstance(value, dict) and value.keys() == {"float"}:
        return float(value["float"])
    return value


def encodable(text: str) -> bool:
    """Whether ``text`` can be schema text (UTF-8): no lone surrogates."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _value_key(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_value_key(v) for v in value)
    if isinstance(value, float | complex):
        return type(value), repr(value)
    return type(value), value


class _JsonTagged:
    """Marks a field whose JSON form goes through `_encode` (pydantic's ``PlainSerializer``).

    ``field_serializer`` would do the same, but importing it loads
    ``pydantic.functional_serializers``, a few milliseconds of ``import customop``
    (issue #12); the core schema it would build is set here directly.
    """

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        schema = handler(source)
        # Every core schema takes "serialization"; pydantic's PlainSerializer sets it so too.
        schema["serialization"] = core_schema.plain_serializer_function_ser_schema(  # type: ignore[index]
            _encode, return_schema=core_schema.any_schema(), when_used="json"
        )
        return schema


class Default(Frozen):
    """A default value and the spelling it was written with."""

    value: Annotated[DefaultValue, _JsonTagged()]
    spelling: str = ""

    @field_validator("value", mode="before")
    @classmethod
    def _decode(cls, value: Any) -> Any:
        value = _decode(value)
        for text in value if isinstance(value, tuple) else (value,):
            if _too_big(text):
                raise SchemaError(
                    f"integer default {_describe(text)}. Schema integers are 64-bit, as "
                    "torch's. Use a value from -2**63 to 2**63 - 1, or a float."
                )
            if isinstance(text, str) and not encodable(text):
                raise SchemaError(
                    f"string default {clip_repr(text)} has a lone surrogate. Schema text is UTF-8, "
                    "which cannot hold one. Use a valid Unicode string."
                )
        return value

    @model_validator(mode="after")
    def _fill_spelling(self) -> Default:
        if not self.spelling:
            object.__setattr__(self, "spelling", format_value(self.value))
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Default) and _value_key(self.value) == _value_key(other.value)

    def __hash__(self) -> int:
        return hash(_value_key(self.value))


def coerce_default(value: Any, tp: SchemaType) -> Any:
    """Apply torch's conversions: an int default of a float type is a float,
    a scalar default of a fixed-size list ``int[2] x=1`` repeats."""
    # torch converts only a plain `float`, so `float? x=1` keeps printing as 1.
    inner = tp.elem if isinstance(tp, OptionalType) else tp
    if isinstance(inner, ListType):
        if not isinstance(value, tuple) and value is not None and inner.size is not None:
            return (value,) * inner.size
        if isinstance(value, tuple):
            return tuple(coerce_default(v, inner.elem) for v in value)
    is_float = isinstance(tp, BaseType) and tp.name in _FLOAT_LIKE
    if is_float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _strip_optional(tp: SchemaType) -> SchemaType:
    return tp.elem if isinstance(tp, OptionalType) else tp


#: Schema integers are 64-bit, as torch's (it reads defaults with std::stoll).
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1


def _too_big(value: Any) -> bool:
    return type(value) is int and not INT64_MIN <= value <= INT64_MAX


def _fits_scalar(value: Any, tp: SchemaType) -> bool:
    if _too_big(value):
        return False
    if isinstance(tp, OptionalType):
        return value is None or _fits_scalar(value, tp.elem)
    if not isinstance(tp, BaseType):
        return value is None and tp.kind in ("var", "union", "class")
    name = tp.name
    if name in _OPEN:
        return True
    if name in ("bool", "SymBool"):
        return isinstance(value, bool)
    if name in _INT_LIKE:
        return isinstance(value, int) and not isinstance(value, bool)
    if name in _FLOAT_LIKE:
        return isinstance(value, float | int) and not isinstance(value, bool)
    if name in _NUMBER_LIKE:
        return isinstance(value, int | float | complex)
    if name in ("str", "Device"):
        return isinstance(value, str)
    return False


def check_default(value: Any, tp: SchemaType) -> str | None:
    """Why ``value`` cannot be a default of type ``tp``, or None when it can."""
    if value is None:
        if isinstance(tp, OptionalType) or (isinstance(tp, BaseType) and tp.name in _OPEN):
            return None
        return f"None is only a default for an optional type; write {tp}? to allow None"
    inner = _strip_optional(tp)
    if isinstance(inner, ListType):
        if not isinstance(value, tuple):
            return f"a default of type {inner} must be a list like [0, 1]"
        bad = [v for v in value if not _fits_scalar(v, inner.elem)]
        if not bad:
            return None
        return f"element {_describe(bad[0])} is not a value of type {inner.elem}"
    if isinstance(value, tuple) or not _fits_scalar(value, inner):
        return f"{_describe(value)} is not a value of type {inner}"
    return None


def _describe(value: Any) -> str:
    if _too_big(value):
        return f"{clip_repr(value, 40)} (out of the 64-bit range)"
    return clip_repr(value)


def _format_float(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if math.isnan(value):
        return "nan"
    text = format(value, ".17g")  # C's %.17g, as torch prints doubles
    return text if "." in text or "e" in text or "n" in text else text + "."


_ESCAPES = {
    "\\": "\\\\", "'": "\\'", '"': '\\"', "\a": "\\a", "\b": "\\b", "\f": "\\f",
    "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
}  # fmt: skip


def _quote(text: str) -> str:
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char.isprintable() and char.isascii():
            out.append(char)
        else:
            out.extend("\\" + format(byte, "03o") for byte in char.encode())
    return '"' + "".join(out) + '"'


def format_value(value: Any) -> str:
    """A value as torch's C++ printer writes it (``1.``, ``"mean"``, ``[0, 1]``)."""
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _format_float(value)
    if isinstance(value, complex):
        imag = _format_float(value.imag)
        sign = "" if imag.startswith("-") else "+"
        return f"{_format_float(value.real)}{sign}{imag}j"
    if isinstance(value, str):
        return _quote(value)
    return "[" + ", ".join(format_value(v) for v in value) + "]"


def format_default(default: Default, tp: SchemaType) -> str:
    """The canonical (torch C++) text of a default of type ``tp``."""
    value = default.value
    # torch prints `int[2] stride=1` for [1, 1]: an int list of its declared size
    # with all elements equal shows one element (only for int, not SymInt).
    if (
        type(tp) is ListType  # not isinstance: a pydantic class's ABCMeta hook costs ~1 µs
        and isinstance(value, tuple)
        and len(value) > 1
        and tp.size == len(value)
        and type(tp.elem) is BaseType
        and tp.elem.name == "int"
        and all(v == value[0] for v in value)
    ):
        return format_value(value[0])
    return format_value(value)


def require_default_fits(value: Any, tp: SchemaType, where: str) -> None:
    problem = check_default(value, tp)
    if problem is not None:
        raise SchemaError(f"{where}: default {value!r} does not fit type {tp}: {problem}.")

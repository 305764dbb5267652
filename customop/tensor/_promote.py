"""torch's type promotion, for the results of arithmetic on fakes.

``promote_types(a, b)`` is ``torch.promote_types``; ``result_type(*operands)``
is ``torch.result_type`` over tensors and Python numbers: tensors with
dimensions decide first, then zero-dimensional ones, then Python numbers
(``int`` as int64, ``float`` as the default float32, ``complex`` as
complex64), each of them only by moving to a higher category (bool < integer
< floating < complex), as torch's ``ResultTypeState`` does.
"""

from __future__ import annotations

from typing import Any, Final

from customop.tensor._dtype import DTYPES, dtype

__all__ = ["category", "promote_types", "result_type", "to_complex", "to_float"]

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3
_BITS: Final = {"bool": 8, "uint8": 8, "int8": 8, "int16": 16, "uint16": 16, "int32": 32,
                "uint32": 32, "int64": 64, "uint64": 64, "float16": 16, "bfloat16": 16,
                "float32": 32, "float64": 64, "complex32": 32, "complex64": 64,
                "complex128": 128}  # fmt: skip


def category(kind: dtype) -> int:
    """0 for bool, 1 for integers, 2 for floating point, 3 for complex."""
    if kind.name == "bool":
        return _BOOL
    if kind.is_complex:
        return _COMPLEX
    return _FLOAT if kind.is_floating_point else _INT


def _bits(kind: dtype) -> int:
    return _BITS.get(kind.name, 64)


def _signed(kind: dtype) -> bool:
    return not kind.name.startswith("uint")


def to_complex(kind: dtype) -> dtype:
    """The complex dtype with ``kind``'s precision (float64 -> complex128)."""
    if category(kind) == _COMPLEX:
        return kind
    return DTYPES["complex128" if _bits(kind) == 64 else "complex64"]


def to_float(kind: dtype) -> dtype:
    """``kind`` when floating or complex, else the default float32 (torch's ``sin`` of ints)."""
    return kind if category(kind) >= _FLOAT else DTYPES["float32"]


def _promote_ints(a: dtype, b: dtype) -> dtype:
    if _signed(a) == _signed(b):
        return a if _bits(a) >= _bits(b) else b
    signed, unsigned = (a, b) if _signed(a) else (b, a)
    if _bits(signed) > _bits(unsigned):
        return signed
    wider = {8: "int16", 16: "int32", 32: "int64"}.get(_bits(unsigned), "int64")
    return DTYPES[wider]


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to without losing their category."""
    if a is b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        high, low = (a, b) if ca > cb else (b, a)
        if category(high) == _COMPLEX and category(low) == _FLOAT:
            return to_complex(low) if _bits(low) == 64 else high
        return high
    if ca == _INT:
        return _promote_ints(a, b)
    if {a.name, b.name} == {"float16", "bfloat16"}:
        return DTYPES["float32"]
    return a if _bits(a) >= _bits(b) else b


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    """torch's combine_categories: ``lower`` counts only by a higher category."""
    if higher is None:
        return lower
    if lower is None or category(higher) >= category(lower):
        return higher
    if category(lower) == _COMPLEX and category(higher) == _FLOAT:
        return to_complex(higher)
    return promote_types(higher, lower)


def _scalar_dtype(value: object) -> dtype | None:
    if isinstance(value, bool):
        return DTYPES["bool"]
    if isinstance(value, int):
        return DTYPES["int64"]
    if isinstance(value, float):
        return DTYPES["float32"]  # torch's default dtype, not float64
    if isinstance(value, complex):
        return DTYPES["complex64"]
    return None


def result_type(operands: tuple[tuple[Any, dtype | None, int], ...]) -> dtype:
    """torch.result_type of ``(value, dtype, ndim)`` operands (dtype None: a Python number).

    Raises:
        TypeError: an operand is neither a tensor nor a number.
    """
    tiers: list[dtype | None] = [None, None, None]
    for value, given, ndim in operands:
        kind = _scalar_dtype(value) if given is None else given
        if kind is None:
            raise TypeError(
                f"FakeTensor: operand {value!r:.60} is not a tensor or a number. Arithmetic "
                "on fakes takes fakes, arrays and Python numbers. Pass one of those."
            )
        tier = 2 if given is None else 0 if ndim else 1
        found = tiers[tier]
        tiers[tier] = kind if found is None else promote_types(found, kind)
    result = _combine(tiers[0], _combine(tiers[1], tiers[2]))
    return DTYPES["float32"] if result is None else result  # None: no operands at all

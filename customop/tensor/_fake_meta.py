"""What fake arithmetic needs to know: the metadata of operands, broadcasting, and tables.

``metadata_of`` reads a fake's or a real array's shape, dtype and device;
``broadcast_shapes`` is torch's broadcast (an undecided symbolic size is
assumed equal with `check`, as torch guards); `UNARY` and `BINARY` say, per
torch function name, how the result's dtype follows the inputs'. Used by
`customop.tensor._fake_math` (the methods) and `customop.tensor._fake_torch`
(torch's functions).
"""

from __future__ import annotations

from typing import Any, Final

from customop.symbolic import IntLike, SymBool
from customop.tensor._check import check
from customop.tensor._device import Device, to_device
from customop.tensor._dtype import DTYPES, dtype, to_dtype

__all__ = ["BINARY", "BOOL", "UNARY", "broadcast_shapes", "metadata_of", "operands"]

#: The dtype of comparisons and logical results.
BOOL: Final = DTYPES["bool"]


def _decided(cond: bool | SymBool) -> bool | None:
    return cond.decided if isinstance(cond, SymBool) else bool(cond)


def broadcast_shapes(*shapes: tuple[IntLike, ...]) -> tuple[IntLike, ...]:
    """torch's broadcast of ``shapes``; undecided symbolic sizes are assumed equal.

    Raises:
        ValueError: two sizes differ and neither is 1.
    """
    ndim = max((len(shape) for shape in shapes), default=0)
    result: list[IntLike] = [1] * ndim
    for shape in shapes:
        for offset, size in enumerate(shape, start=ndim - len(shape)):
            have = result[offset]
            if isinstance(size, int) and size == 1:
                continue
            if isinstance(have, int) and have == 1:
                result[offset] = size
                continue
            if _decided(have == size) is False:
                raise ValueError(
                    f"FakeTensor: shapes {list(shapes)!r} do not broadcast: size {have} and "
                    f"{size} differ and neither is 1. torch broadcasts only equal sizes or 1. "
                    "Fix the shapes the fake impl combines."
                )
            check(have == size)
    return tuple(result)


def metadata_of(value: object) -> tuple[tuple[IntLike, ...], dtype, Device] | None:
    """Shape, dtype and device of a fake or a real array; None for anything else."""
    from customop.tensor._fake import FakeTensor  # noqa: PLC0415 -- _fake imports this module

    if isinstance(value, FakeTensor):
        return value._shape, value._dtype, value._device
    shape, kind = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is None or kind is None or isinstance(value, type):
        return None
    device = getattr(value, "device", "cpu")
    where = to_device(device if isinstance(device, str) or hasattr(device, "type") else "cpu")
    return tuple(int(size) for size in shape), to_dtype(kind, api="FakeTensor"), where


def operands(values: tuple[object, ...]) -> tuple[tuple[Any, dtype | None, int], ...]:
    found = []
    for value in values:
        meta = metadata_of(value)
        found.append((value, None, 0) if meta is None else (value, meta[1], len(meta[0])))
    return tuple(found)


#: Unary functions by torch name: how each one's result dtype follows its input's.
#: "float": ints and bools give float32 (torch's sin of an int tensor), "same": kept,
#: "bool": a bool result (isnan).
_FLOAT_UNARY: Final = (
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "rsqrt",
    "sigmoid",
    "erf",
    "erfc",
    "erfinv",
    "reciprocal",
    "lgamma",
    "digamma",
)
_SAME_UNARY: Final = (
    "neg",
    "negative",
    "abs",
    "absolute",
    "relu",
    "gelu",
    "silu",
    "mish",
    "softplus",
    "hardtanh",
    "elu",
    "leaky_relu",
    "floor",
    "ceil",
    "round",
    "trunc",
    "fix",
    "sign",
    "sgn",
    "square",
    "frac",
    "positive",
    "bitwise_not",
    "clamp",
    "clip",
    "nan_to_num",
)
_BOOL_UNARY: Final = (
    "isnan",
    "isinf",
    "isfinite",
    "isneginf",
    "isposinf",
    "logical_not",
    "signbit",
)

#: Unary functions by torch name: how each one's result dtype follows its input's.
#: "float": ints and bools give float32 (torch's sin of an int tensor), "same": kept,
#: "bool": a bool result (isnan).
UNARY: Final[dict[str, str]] = {
    **dict.fromkeys(_FLOAT_UNARY, "float"),
    **dict.fromkeys(_SAME_UNARY, "same"),
    **dict.fromkeys(_BOOL_UNARY, "bool"),
}

_PROMOTE_BINARY: Final = (
    "add",
    "sub",
    "subtract",
    "mul",
    "multiply",
    "pow",
    "remainder",
    "fmod",
    "floor_divide",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "hypot",
    "copysign",
)
_BOOL_BINARY: Final = (
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "greater",
    "less",
    "greater_equal",
    "less_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
)

#: Binary functions by torch name: "promote" (torch's result type), "float" (promoted, then
#: at least float32: true division), "bool" (comparisons and logical ops).
BINARY: Final[dict[str, str]] = {
    **dict.fromkeys(_PROMOTE_BINARY, "promote"),
    **dict.fromkeys(("div", "divide", "true_divide", "atan2", "xlogy"), "float"),
    **dict.fromkeys(_BOOL_BINARY, "bool"),
}

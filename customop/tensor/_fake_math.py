"""Arithmetic, elementwise functions and conversions on fakes, with torch's result metadata.

Fake impls written for torch compute on their inputs: ``x * 2``, ``x ** 2``,
``x + y``, ``x.sin()``, ``x.clone()``, ``x.to(torch.float16)``. On a
`FakeTensor` each gives a fake with torch's result shape (broadcasting, with
`SymInt` sizes kept symbolic: unequal sizes that are not 1 are assumed equal
with `check`, as torch guards), dtype (`customop.tensor._promote`, torch's
promotion) and strides (the input's layout when it keeps it, as torch's
``preserve_format``). Nothing here reads or makes data.

The other operand may be a fake, any real array (its metadata is used) or
a Python number.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from customop.symbolic import IntLike, SymBool
from customop.tensor._check import check
from customop.tensor._device import Device, to_device
from customop.tensor._dtype import DTYPES, DTypeLike, dtype, to_dtype
from customop.tensor._fake_layout import Strides, dense_like
from customop.tensor._promote import category, result_type, to_float

if TYPE_CHECKING:
    from customop.tensor._fake import FakeTensor

__all__ = ["BINARY", "UNARY", "FakeTensorMath", "broadcast_shapes", "metadata_of"]

_BOOL: Final = DTYPES["bool"]


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


def _operands(values: tuple[object, ...]) -> tuple[tuple[Any, dtype | None, int], ...]:
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


class FakeTensorMath:
    """Elementwise and conversion methods of `FakeTensor` (a mixin: FakeTensor holds the slots)."""

    __slots__ = ()

    if TYPE_CHECKING:
        _shape: tuple[IntLike, ...]
        _dtype: dtype
        _device: Device

        def _view(
            self, shape: tuple[IntLike, ...], strides: Strides | None = None
        ) -> FakeTensor: ...

        def _layout(self) -> Strides: ...

    def _like(self, kind: dtype, device: Device | None = None, *, keep: bool = True) -> FakeTensor:
        """A new fake of this shape (this layout, made dense, when ``keep``)."""
        own: Strides | None = getattr(self, "_strides", None)
        result = self._view(self._shape, dense_like(self._shape, own) if keep else None)
        result._dtype, result._device = kind, self._device if device is None else device
        return result

    def _unary(self, name: str) -> FakeTensor:
        rule = UNARY[name]
        kind = to_float(self._dtype) if rule == "float" else _BOOL if rule == "bool" else None
        return self._like(self._dtype if kind is None else kind)

    def _binary(self, name: str, other: object, *, reverse: bool = False) -> FakeTensor:
        pair = (other, self) if reverse else (self, other)
        meta = metadata_of(other)
        shape = self._shape if meta is None else broadcast_shapes(self._shape, meta[0])
        rule = BINARY[name]
        kind = _BOOL if rule == "bool" else result_type(_operands(pair))
        if rule == "float":
            kind = to_float(kind)
        if shape == self._shape:
            return self._like(kind)
        result = self._view(shape)
        result._dtype = kind
        return result

    # -- operators ---------------------------------------------------------------------

    def __add__(self, other: object) -> FakeTensor:
        return self._binary("add", other)

    def __radd__(self, other: object) -> FakeTensor:
        return self._binary("add", other, reverse=True)

    def __sub__(self, other: object) -> FakeTensor:
        return self._binary("sub", other)

    def __rsub__(self, other: object) -> FakeTensor:
        return self._binary("sub", other, reverse=True)

    def __mul__(self, other: object) -> FakeTensor:
        return self._binary("mul", other)

    def __rmul__(self, other: object) -> FakeTensor:
        return self._binary("mul", other, reverse=True)

    def __truediv__(self, other: object) -> FakeTensor:
        return self._binary("div", other)

    def __rtruediv__(self, other: object) -> FakeTensor:
        return self._binary("div", other, reverse=True)

    def __floordiv__(self, other: object) -> FakeTensor:
        return self._binary("floor_divide", other)

    def __mod__(self, other: object) -> FakeTensor:
        return self._binary("remainder", other)

    def __pow__(self, other: object) -> FakeTensor:
        return self._binary("pow", other)

    def __rpow__(self, other: object) -> FakeTensor:
        return self._binary("pow", other, reverse=True)

    def __and__(self, other: object) -> FakeTensor:
        return self._binary("bitwise_and", other)

    def __or__(self, other: object) -> FakeTensor:
        return self._binary("bitwise_or", other)

    def __xor__(self, other: object) -> FakeTensor:
        return self._binary("bitwise_xor", other)

    # Ordering comparisons only: == and != keep comparing objects (fakes stay hashable).
    def __lt__(self, other: object) -> FakeTensor:
        return self._binary("lt", other)

    def __le__(self, other: object) -> FakeTensor:
        return self._binary("le", other)

    def __gt__(self, other: object) -> FakeTensor:
        return self._binary("gt", other)

    def __ge__(self, other: object) -> FakeTensor:
        return self._binary("ge", other)

    def __neg__(self) -> FakeTensor:
        return self._unary("neg")

    def __pos__(self) -> FakeTensor:
        return self._unary("positive")

    def __abs__(self) -> FakeTensor:
        return self._unary("abs")

    def __invert__(self) -> FakeTensor:
        return self._unary("bitwise_not")

    # -- conversions -------------------------------------------------------------------

    def clone(self, *, memory_format: object = None) -> FakeTensor:
        """A fake with this metadata, laid out densely in this fake's dimension order
        (torch's ``preserve_format``), or contiguously with ``torch.contiguous_format``."""
        contiguous = str(memory_format).endswith("contiguous_format")
        return self._like(self._dtype, keep=not contiguous)

    def detach(self) -> FakeTensor:
        """A fake with the same metadata (a fake has no gradient to detach from)."""
        return self._like(self._dtype)

    def to(self, *args: Any, **kwargs: Any) -> FakeTensor:
        """torch's ``to``: a dtype, a device, both, or another tensor's (``copy=``, ...
        accepted): this fake itself when nothing changes, as torch returns ``self``."""
        kind, device = _to_target(args, kwargs)
        new_kind = self._dtype if kind is None else kind
        new_device = self._device if device is None else device
        if new_kind is self._dtype and new_device == self._device and not kwargs.get("copy"):
            return self  # type: ignore[return-value]  # a mixin of FakeTensor only
        return self._like(new_kind, new_device)

    def type_as(self, other: Any) -> FakeTensor:
        """This fake in ``other``'s dtype."""
        return self.to(dtype=other.dtype)

    def float(self) -> FakeTensor:
        """As float32."""
        return self.to(DTYPES["float32"])

    def double(self) -> FakeTensor:
        """As float64."""
        return self.to(DTYPES["float64"])

    def half(self) -> FakeTensor:
        """As float16."""
        return self.to(DTYPES["float16"])

    def bfloat16(self) -> FakeTensor:
        """As bfloat16."""
        return self.to(DTYPES["bfloat16"])

    def int(self) -> FakeTensor:
        """As int32."""
        return self.to(DTYPES["int32"])

    def long(self) -> FakeTensor:
        """As int64."""
        return self.to(DTYPES["int64"])

    def bool(self) -> FakeTensor:
        """As bool."""
        return self.to(_BOOL)

    def cpu(self) -> FakeTensor:
        """On the cpu."""
        return self.to("cpu")

    # After bool() above, `bool` in this class body names that method: hence builtins.bool.
    def is_floating_point(self) -> builtins.bool:
        """Whether the dtype is a floating point one."""
        return category(self._dtype) == 2

    def is_complex(self) -> builtins.bool:
        """Whether the dtype is a complex one."""
        return self._dtype.is_complex


def _to_target(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dtype | None, Device | None]:
    """The dtype and device of ``to(...)``'s arguments, in any of torch's forms."""
    kind = kwargs.get("dtype")
    device = kwargs.get("device")
    for arg in args:
        meta = metadata_of(arg)
        if meta is not None:  # to(other): other's dtype and device
            kind, device = meta[1], meta[2]
        elif isinstance(arg, str):  # to("cuda"), as torch reads a string
            device = arg
        elif arg is not None and not isinstance(arg, bool):
            try:
                kind = to_dtype(arg, api="FakeTensor.to")
            except TypeError:  # not a dtype: a device (torch.device, customop Device)
                device = arg
    return (
        None if kind is None else to_dtype(kind, api="FakeTensor.to"),
        None if device is None else to_device(device),
    )


def _method(kind: str, name: str) -> Callable[..., Any]:
    if kind == "unary":

        def unary(self: FakeTensorMath, *args: Any, **kwargs: Any) -> FakeTensor:
            return self._unary(name)

        unary.__doc__ = f"torch's ``Tensor.{name}``: a fake of the result's metadata."
        return unary

    def binary(self: FakeTensorMath, other: object, *args: Any, **kwargs: Any) -> FakeTensor:
        return self._binary(name, other)

    binary.__doc__ = f"torch's ``Tensor.{name}(other)``: a fake of the result's metadata."
    return binary


def _install() -> None:
    """The named functions as methods (``x.sin()``, ``x.add(y, alpha=2)``) and in place (``_``)."""
    for kind, table in (("unary", UNARY), ("binary", BINARY)):
        for name in table:
            if name not in vars(FakeTensorMath):
                function = _method(kind, name)
                function.__name__ = function.__qualname__ = name
                setattr(FakeTensorMath, name, function)
            inplace = f"{name}_"
            if table[name] != "bool" and inplace not in vars(FakeTensorMath):
                setattr(FakeTensorMath, inplace, _in_place)


def _in_place(self: FakeTensorMath, *args: Any, **kwargs: Any) -> FakeTensorMath:
    """An in-place op on a fake: the fake itself (its metadata does not change)."""
    return self


_install()


def fake_dtype(value: DTypeLike | None, default: dtype) -> dtype:
    """``value`` as a dtype, ``default`` for None (for ``dtype=`` keywords)."""
    return default if value is None else to_dtype(value, api="FakeTensor")

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
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from customop.dispatch import DispatchKey, local_keys
from customop.tensor._device import Device, to_device
from customop.tensor._dtype import DTYPES, dtype, to_dtype
from customop.tensor._fake_data import OPERATOR_WORDS, refuse_compute
from customop.tensor._fake_layout import FakeFields, Strides, dense_like
from customop.tensor._fake_meta import BINARY, BOOL, UNARY, broadcast_shapes, metadata_of, operands
from customop.tensor._promote import category, result_type, to_float

if TYPE_CHECKING:
    from customop.tensor._fake import FakeTensor

__all__ = ["COMPUTING_AN_OP", "FakeTensorMath"]


#: True while an op computes its result for a trace (its kernel or fake impl runs
#: below the Tracer key); `customop.trace` sets it around that computation.
COMPUTING_AN_OP: Final[ContextVar[bool]] = ContextVar("customop.computing_an_op", default=False)


def _refuse_in_a_trace(fake: object, name: str) -> None:
    """Arithmetic on fakes is metadata in fake impls and kernels (and in FakeTensorMode),
    as in torch; in a traced function's own body it would be left out of the graph."""
    if DispatchKey.Tracer in local_keys()[0] and not COMPUTING_AN_OP.get():
        refuse_compute(fake, OPERATOR_WORDS.get(name, f"{name}()"))


class FakeTensorMath(FakeFields):
    """Elementwise and conversion methods of `FakeTensor` (a mixin: FakeTensor holds the slots)."""

    __slots__ = ()

    def _like(self, kind: dtype, device: Device | None = None, *, keep: bool = True) -> FakeTensor:
        """A new fake of this shape (this layout, made dense, when ``keep``)."""
        own: Strides | None = getattr(self, "_strides", None)
        result = self._view(self._shape, dense_like(self._shape, own) if keep else None)
        result._dtype, result._device = kind, self._device if device is None else device
        return result

    def _unary(self, name: str) -> FakeTensor:
        _refuse_in_a_trace(self, name)
        rule = UNARY[name]
        kind = to_float(self._dtype) if rule == "float" else BOOL if rule == "bool" else None
        return self._like(self._dtype if kind is None else kind)

    def _binary(self, name: str, other: object, *, reverse: bool = False) -> FakeTensor:
        _refuse_in_a_trace(self, name)
        pair = (other, self) if reverse else (self, other)
        meta = metadata_of(other)
        shape = self._shape if meta is None else broadcast_shapes(self._shape, meta[0])
        rule = BINARY[name]
        kind = BOOL if rule == "bool" else result_type(operands(pair))
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
        return self.to(BOOL)

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

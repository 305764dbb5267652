"""Strides of fakes: torch's layout rules on shapes that may hold `SymInt`s.

A fake has torch's strides (in elements): contiguous (row-major) unless
made otherwise, the real array's under ``FakeTensorMode.from_real``, and what
torch's views give (``transpose`` permutes them, ``expand`` zeroes the
broadcast ones, a slice multiplies by its step). New tensors that keep the
input's layout (``clone``, ``empty_like``, elementwise results: torch's
``preserve_format``) take the input's dimension order, made dense. `opcheck`
compares them with the kernel's, as ``torch.library.opcheck`` does.

Strides of symbolic sizes stay symbolic; a size taken as ``max(size, 1)`` by
torch is taken as the size itself when it is a `SymInt`, as customop's
``stride()`` always did (a size-0 tensor's strides are never read).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from customop.symbolic import IntLike, SymInt

if TYPE_CHECKING:
    from customop.tensor._device import Device
    from customop.tensor._dtype import dtype
    from customop.tensor._fake import FakeTensor

__all__ = [
    "FakeFields",
    "Strides",
    "contiguous_strides",
    "dense_like",
    "is_contiguous",
    "real_strides",
    "significant_mismatch",
]

#: Strides in elements, one per dimension.
Strides: TypeAlias = tuple[IntLike, ...]


def _at_least_one(size: IntLike) -> IntLike:
    return size if isinstance(size, SymInt) else max(size, 1)


def contiguous_strides(shape: Sequence[IntLike]) -> Strides:
    """Row-major strides of ``shape`` (torch multiplies by ``max(size, 1)``)."""
    strides: list[IntLike] = []
    step: IntLike = 1
    for size in reversed(shape):
        strides.append(step)
        step = step * _at_least_one(size)
    return tuple(reversed(strides))


def _decided_equal(a: IntLike, b: IntLike) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    found = a == b
    return bool(getattr(found, "decided", False)) if not isinstance(found, bool) else found


def is_contiguous(shape: Sequence[IntLike], strides: Strides) -> bool:
    """Whether ``strides`` are row-major for ``shape`` (size-1 dims ignored, as torch does)."""
    expected: IntLike = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if isinstance(size, int) and size == 1:
            continue
        if isinstance(size, int) and size == 0:
            return True
        if not _decided_equal(stride, expected):
            return False
        expected = expected * _at_least_one(size)
    return True


def _order(strides: Strides) -> list[int]:
    """Dimensions from the outermost (largest stride) to the innermost, stably."""
    numbers = [s for s in strides if isinstance(s, int)]
    if len(numbers) < len(strides):
        return list(range(len(strides)))  # symbolic strides: keep row-major order
    return sorted(range(len(numbers)), key=lambda i: (-numbers[i], i))


def dense_like(shape: Sequence[IntLike], strides: Strides | None) -> Strides | None:
    """Dense strides in the dimension order of ``strides`` (torch's ``preserve_format``).

    None (contiguous) when ``strides`` is None or already row-major ordered.
    """
    if strides is None or is_contiguous(shape, strides):
        return None
    order = _order(strides)
    if order == list(range(len(shape))):
        return None
    result: list[IntLike] = [0] * len(shape)
    step: IntLike = 1
    for dim in reversed(order):
        result[dim] = step
        step = step * _at_least_one(shape[dim])
    return tuple(result)


def real_strides(array: Any) -> Strides | None:
    """A real array's strides in elements (torch's ``stride()``, numpy's bytes / itemsize).

    None when the array is contiguous or does not say (then a fake is contiguous).
    """
    stride = getattr(array, "stride", None)
    if callable(stride):  # a torch tensor
        found = tuple(int(s) for s in stride())
    else:
        raw, itemsize = getattr(array, "strides", None), getattr(array, "itemsize", 0)
        if not isinstance(raw, tuple) or not itemsize:
            return None
        found = tuple(int(s) // int(itemsize) for s in raw)
    shape = tuple(int(size) for size in array.shape)
    return None if is_contiguous(shape, found) else found


def significant_mismatch(shape: Sequence[IntLike], expected: Strides, got: Strides) -> int | None:
    """The first dimension of size > 1 whose strides differ (torch's significant strides).

    A symbolic stride on the fake side matches anything, as torch allows for
    unbacked sizes; an empty tensor has no significant strides.
    """
    if any(isinstance(size, int) and size == 0 for size in shape):
        return None
    for dim, (size, want, have) in enumerate(zip(shape, expected, got, strict=True)):
        if isinstance(have, SymInt) or isinstance(want, SymInt):
            continue
        if isinstance(size, int) and size <= 1:
            continue
        if int(want) != int(have):
            return dim
    return None


class FakeFields:
    """The base of `FakeTensor`'s method mixins: its fields, and new fakes of its metadata."""

    __slots__ = ()

    if TYPE_CHECKING:
        _shape: tuple[IntLike, ...]
        _dtype: dtype
        _device: Device

        def _dim_index(self, dim: object, api: str) -> int: ...
        def numel(self) -> IntLike: ...

    def _view(self, shape: tuple[IntLike, ...], strides: Strides | None = None) -> FakeTensor:
        """A fake of ``shape`` with this one's dtype and device (and ``strides``, if not dense)."""
        from customop.tensor._fake import FakeTensor  # noqa: PLC0415 -- _fake imports this module

        fake = FakeTensor._new(shape, self._dtype, self._device)
        if strides is not None and not is_contiguous(shape, strides):
            fake._strides = strides
        return fake

    def _layout(self) -> Strides:
        """This fake's strides, contiguous ones computed when it has none of its own."""
        own: Strides | None = getattr(self, "_strides", None)  # unset: contiguous
        return contiguous_strides(self._shape) if own is None else own

"""The torch-style metadata methods fake impls call on a `FakeTensor`.

``x.new_empty``, ``x.reshape(-1, 4)``, ``x.transpose(0, 1)``, ``x[:, None]``,
``x.stride()``, ... compute the result's metadata only, and keep symbolic
sizes symbolic: nothing here turns a `SymInt` into an int. Where torch would
guard on a size (``reshape`` needs equal element counts, ``expand`` needs
equal sizes), an undecided condition is assumed with `check` and recorded;
a decided False one raises.

A fake carries torch's strides (`customop.tensor._fake_layout`): contiguous
unless made otherwise, and views (``transpose``, ``expand``, ``x[::2]``, ...)
get the strides torch's views would have. ``reshape`` and ``view`` give
contiguous fakes. The arithmetic, reductions and conversions fake impls call
(``x * 2``, ``x.sum(0)``, ``x.to(torch.float16)``) are in
`customop.tensor._fake_math`; torch's functions (``torch.cat``) reach fakes
through ``FakeTensor.__torch_function__`` (`customop.tensor._fake_torch`).

Views are not recorded by `customop.trace`: call these in fake impls, not on
the values of a traced function.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final, NoReturn

from customop.symbolic import (
    IntLike,
    SymBool,
    SymInt,
    as_int,
    sym_max,
    sym_min,
    torch_function_hook,
)
from customop.tensor._check import check
from customop.tensor._device import DeviceLike
from customop.tensor._dtype import DTypeLike, dtype
from customop.tensor._fake_layout import FakeFields, Strides, is_contiguous

if TYPE_CHECKING:
    from customop.tensor._fake import FakeTensor

__all__ = ["STRIDED", "FakeTensorMethods", "check_layout", "element_size"]

_BITS: Final = re.compile(r"\d+")


def element_size(kind: dtype) -> int:
    """Bytes per element of ``kind`` (``bool``: 1)."""
    found = _BITS.search(kind.name)
    return 1 if found is None else max(1, int(found.group()) // 8)


#: torch's spellings of the one layout customop has: dense, strided arrays.
_STRIDED: Final = frozenset({"strided", "torch.strided"})


class _Strided(str):
    """``"strided"``, which torch's functions hand to customop (``__torch_function__``)."""

    __slots__ = ()

    __torch_function__ = torch_function_hook


#: A fake's ``layout``: the str ``"strided"``, that torch's factories also accept.
STRIDED: Final = _Strided("strided")


def check_layout(layout: object, api: str) -> None:
    """Accept ``None``, ``"strided"`` and ``torch.strided``; refuse other layouts."""
    if layout is not None and str(layout) not in _STRIDED:
        raise ValueError(
            f"{api}: layout {layout!r:.60} is not supported. customop's arrays and fakes are "
            "dense (torch's strided layout). Pass layout=None, 'strided' or torch.strided."
        )


def _sizes(api: str, shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """``f(2, 3)`` and ``f((2, 3))`` alike, as torch accepts both."""
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        return tuple(shape[0])
    return shape


def _decided(cond: bool | SymBool) -> bool | None:
    return cond.decided if isinstance(cond, SymBool) else bool(cond)


class FakeTensorMethods(FakeFields):
    """Metadata methods of `FakeTensor` (a mixin: FakeTensor holds the slots)."""

    __slots__ = ()

    # -- new tensors -----------------------------------------------------------------

    def new_empty(
        self,
        *size: Any,
        dtype: DTypeLike | None = None,
        device: DeviceLike | None = None,
        layout: object = None,
    ) -> FakeTensor:
        """A new fake of ``size`` with this fake's dtype and device (unless given).

        ``layout`` takes torch's spellings of the dense layout only (see `check_layout`).
        """
        check_layout(layout, "FakeTensor.new_empty")
        from customop.tensor._factory import new_empty  # noqa: PLC0415 -- it imports _fake

        fake: Any = self  # a FakeTensor (this mixin's class); mypy sees only the mixin
        result: FakeTensor = new_empty(fake, _sizes("new_empty", size), dtype=dtype, device=device)
        return result

    def new_zeros(
        self,
        *size: Any,
        dtype: DTypeLike | None = None,
        device: DeviceLike | None = None,
        layout: object = None,
    ) -> FakeTensor:
        """Same as `new_empty`: a fake has no values to fill."""
        return self.new_empty(*size, dtype=dtype, device=device, layout=layout)

    def new_ones(
        self,
        *size: Any,
        dtype: DTypeLike | None = None,
        device: DeviceLike | None = None,
        layout: object = None,
    ) -> FakeTensor:
        """Same as `new_empty`: a fake has no values to fill."""
        return self.new_empty(*size, dtype=dtype, device=device, layout=layout)

    # -- layout ----------------------------------------------------------------------

    @property
    def layout(self) -> str:
        """``"strided"``: fakes are dense arrays (torch's ``torch.strided``, which torch's
        factories read it as: ``torch.empty(n, layout=x.layout)`` works in a fake impl)."""
        return STRIDED

    def stride(self, dim: int | None = None) -> Any:
        """The strides (in elements), or dimension ``dim``'s: contiguous unless made otherwise."""
        result = self._layout()
        return result if dim is None else result[self._dim_index(dim, "FakeTensor.stride")]

    def is_contiguous(self, memory_format: object = None) -> bool:
        """Whether the strides are row-major (size-1 dimensions aside, as in torch)."""
        own: Strides | None = getattr(self, "_strides", None)
        return own is None or is_contiguous(self._shape, own)

    def contiguous(self, memory_format: object = None) -> FakeTensor:
        """This fake itself when contiguous, else a contiguous fake of the same shape."""
        if self.is_contiguous():
            return self  # type: ignore[return-value]  # a mixin of FakeTensor only
        return self._view(self._shape)

    def element_size(self) -> int:
        """Bytes per element of the dtype."""
        return element_size(self._dtype)

    # -- shape changes ---------------------------------------------------------------

    def reshape(self, *shape: Any) -> FakeTensor:
        """A fake of ``shape``; one entry may be ``-1``, inferred from the element count."""
        return self._view(self._reshaped("reshape", _sizes("reshape", shape)))

    def view(self, *shape: Any) -> FakeTensor:
        """Same as `reshape` (a fake has no strides to keep)."""
        return self._view(self._reshaped("view", _sizes("view", shape)))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> FakeTensor:
        """Dimensions ``start_dim..end_dim`` merged into one."""
        if not self._shape:
            return self._view((1,))
        start = self._dim_index(start_dim, "FakeTensor.flatten")
        end = self._dim_index(end_dim, "FakeTensor.flatten")
        merged: IntLike = 1
        for size in self._shape[start : end + 1]:
            merged = merged * size
        return self._view((*self._shape[:start], merged, *self._shape[end + 1 :]))

    def _reshaped(self, api: str, shape: tuple[Any, ...]) -> tuple[IntLike, ...]:
        sizes = [size if isinstance(size, SymInt) else as_int(size) for size in shape]
        if any(size is None for size in sizes):
            _bad(api, f"shape {shape!r} has an entry that is not an int or SymInt")
        inferred = [i for i, size in enumerate(sizes) if isinstance(size, int) and size == -1]
        if len(inferred) > 1:
            _bad(api, f"shape {shape!r} has more than one -1; only one size can be inferred")
        known: IntLike = 1
        for i, size in enumerate(sizes):
            if i not in inferred:
                known = known * size  # type: ignore[operator]  # None refused above
        total = self.numel()
        if inferred:
            if _decided(known == 0):
                _bad(api, f"shape {shape!r} has a 0 besides -1, so -1 cannot be inferred")
            sizes[inferred[0]] = total // known
            known = known * sizes[inferred[0]]  # type: ignore[operator]
        if _decided(known == total) is False:
            _bad(api, f"shape {shape!r} has {known} elements but the input has {total}")
        check(known == total)  # undecided: assumed and recorded, as torch guards
        return tuple(sizes)  # type: ignore[arg-type]

    def expand(self, *sizes: Any) -> FakeTensor:
        """A fake broadcast to ``sizes`` (``-1`` keeps a size; new dims go in front)."""
        target = _sizes("expand", sizes)
        if len(target) < len(self._shape):
            _bad("expand", f"sizes {target!r} have fewer dimensions than the shape")
        lead = len(target) - len(self._shape)
        result: list[IntLike] = list(target[:lead])
        strides: list[IntLike] = [0] * lead  # new leading dimensions repeat: stride 0
        for old, new, stride in zip(self._shape, target[lead:], self._layout(), strict=True):
            if isinstance(new, int) and new == -1:
                result.append(old)
                strides.append(stride)
            elif isinstance(old, int) and old == 1:
                result.append(new)
                strides.append(stride if isinstance(new, int) and new == 1 else 0)
            else:
                if _decided(old == new) is False:
                    _bad("expand", f"size {old} cannot expand to {new} (only a size 1 can)")
                check(old == new)
                result.append(new)
                strides.append(stride)
        return self._view(tuple(result), tuple(strides))

    def transpose(self, dim0: int, dim1: int) -> FakeTensor:
        """Dimensions ``dim0`` and ``dim1`` swapped (their strides too)."""
        order = list(range(len(self._shape)))
        a = self._dim_index(dim0, "FakeTensor.transpose")
        b = self._dim_index(dim1, "FakeTensor.transpose")
        order[a], order[b] = order[b], order[a]
        return self._permuted(order)

    def permute(self, *dims: Any) -> FakeTensor:
        """Dimensions reordered: result dimension ``i`` is input dimension ``dims[i]``."""
        order = [self._dim_index(d, "FakeTensor.permute") for d in _sizes("permute", dims)]
        if sorted(order) != list(range(len(self._shape))):
            _bad("permute", f"dims {dims!r} are not a permutation of {len(self._shape)} dims")
        return self._permuted(order)

    def _permuted(self, order: list[int]) -> FakeTensor:
        strides = self._layout()
        return self._view(tuple(self._shape[i] for i in order), tuple(strides[i] for i in order))

    def unsqueeze(self, dim: int) -> FakeTensor:
        """A size-1 dimension inserted at ``dim`` (in ``[-ndim-1, ndim]``)."""
        ndim = len(self._shape) + 1
        index = as_int(dim)
        if index is None or not -ndim <= index < ndim:
            _bad("unsqueeze", f"dim {dim!r} is out of range [-{ndim}, {ndim})")
        index %= ndim
        strides = self._layout()
        # torch's stride for the new dimension: that of the one it is put before, times its size.
        new = strides[index] * self._shape[index] if index < len(strides) else 1
        return self._view(
            (*self._shape[:index], 1, *self._shape[index:]),
            (*strides[:index], new, *strides[index:]),
        )

    def squeeze(self, dim: int | None = None) -> FakeTensor:
        """Size-1 dimensions removed (only ``dim``, when given). A symbolic size is
        removed only when its range says it is 1."""
        if dim is None:
            keep = [i for i, size in enumerate(self._shape) if _decided(size == 1) is not True]
        else:
            index = self._dim_index(dim, "FakeTensor.squeeze")
            one = _decided(self._shape[index] == 1) is True
            keep = [i for i in range(len(self._shape)) if i != index or not one]
        strides = self._layout()
        return self._view(tuple(self._shape[i] for i in keep), tuple(strides[i] for i in keep))

    def __iter__(self) -> Iterator[FakeTensor]:
        """The fakes ``x[0], x[1], ...`` along a concrete first dimension."""
        if not self._shape or not isinstance(self._shape[0], int):
            raise TypeError(
                f"FakeTensor: cannot iterate over a fake of shape {self._shape!r}. Iteration "
                "needs a concrete first dimension. Index with x[i], or use an op."
            )
        return (self[i] for i in range(self._shape[0]))

    def __getitem__(self, index: Any) -> FakeTensor:
        """Basic indexing: ints, slices, ``None`` and ``...`` (shape changes only)."""
        items = index if isinstance(index, tuple) else (index,)
        used = sum(1 for item in items if item is not None and item is not Ellipsis)
        if used > len(self._shape):
            _bad("__getitem__", f"{used} indices for a {len(self._shape)}-d fake")
        shape: list[IntLike] = []
        strides: list[IntLike] = []
        old = self._layout()
        dim = 0
        for item in items:
            if item is None:
                shape.append(1)
                strides.append(old[dim] * self._shape[dim] if dim < len(old) else 1)
            elif item is Ellipsis:
                skip = len(self._shape) - used
                shape.extend(self._shape[dim : dim + skip])
                strides.extend(old[dim : dim + skip])
                dim += skip
            elif isinstance(item, slice):
                shape.append(_slice_length(item, self._shape[dim]))
                strides.append(old[dim] * (1 if item.step is None else item.step))
                dim += 1
            elif as_int(item) is not None or isinstance(item, SymInt):
                _check_index(item, self._shape[dim], dim)
                dim += 1  # an int index drops the dimension
            else:
                _bad("__getitem__", f"index {item!r} is not an int, slice, None or ...; advanced "
                     "(array or bool) indexing depends on data, so use an op")  # fmt: skip
        shape.extend(self._shape[dim:])
        strides.extend(old[dim:])
        return self._view(tuple(shape), tuple(strides))


def _check_index(index: IntLike, size: IntLike, dim: int) -> None:
    # IndexError, as torch and numpy raise; undecided (a symbolic size), the index is
    # assumed in range, as torch guards.
    negative = isinstance(index, int) and index < 0
    in_range = index >= -size if negative else index < size
    if _decided(in_range) is False:
        raise IndexError(
            f"FakeTensor.__getitem__: index {index} is out of range for dimension {dim} of "
            f"size {size}. Indices count from 0, or from -1 at the end. Pass an index in "
            f"[-{size}, {size})."
        )
    check(in_range)


def _slice_length(item: slice, size: IntLike) -> IntLike:
    step = 1 if item.step is None else as_int(item.step)
    if step is None or step <= 0:
        _bad("__getitem__", f"slice step {item.step!r} is not an int > 0")
    first, last = item.start, item.stop
    if last is None and isinstance(first, int) and first < 0:
        span = sym_min(-first, size)  # x[-k:]: the last k, or all when fewer
    else:
        begin = 0 if first is None else _end(first, size, clamp=False)
        stop = size if last is None else _end(last, size)
        span = sym_max(stop - begin, 0)
    return span if step == 1 else (span + step - 1) // step


def _end(bound: Any, size: IntLike, *, clamp: bool = True) -> IntLike:
    """A slice bound counted from the front (negative ones from the end, at least 0).

    A start past the end needs no clamping: the length is at least 0 anyway."""
    if isinstance(bound, int) and bound < 0:
        return sym_max(size + bound, 0)
    return sym_min(bound, size) if clamp else bound


def _bad(api: str, what: str) -> NoReturn:
    raise ValueError(
        f"FakeTensor.{api}: {what}. The result's shape follows torch's rules for "
        f"Tensor.{api}. Pass arguments that fit the fake's shape."
    )

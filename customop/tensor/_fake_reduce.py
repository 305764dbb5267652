"""Reductions, matrix products and splits on fakes: torch's result shapes and dtypes.

``x.sum()``, ``x.sum(dim=1, keepdim=True)``, ``x.mean((0, 2))``,
``x.max(dim=0)`` (values and indices), ``x @ w``, ``x.split(2)``,
``x.tensor_split(3, dim=1)``, ... compute what torch's would give, sizes kept
symbolic where they are. Split sizes that depend on a symbolic size are
refused with a clear error (torch would guard on their values).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from customop.symbolic import IntLike, SymInt, as_int, sym_min
from customop.tensor._dtype import DTYPES, DTypeLike, to_dtype
from customop.tensor._fake_layout import FakeFields
from customop.tensor._fake_meta import broadcast_shapes, metadata_of
from customop.tensor._promote import category, promote_types, to_float

if TYPE_CHECKING:
    from customop.tensor._fake import FakeTensor

__all__ = ["REDUCTIONS", "FakeTensorReduce", "matmul_shape"]

_INT64: Final = DTYPES["int64"]
_BOOL: Final = DTYPES["bool"]

#: Reductions by torch name: how the result's dtype follows the input's. "sum": ints and
#: bools give int64; "float": at least float32; "same"; "bool"; "index": int64 indices.
REDUCTIONS: Final[dict[str, str]] = {
    "sum": "sum", "prod": "sum", "nansum": "sum", "mean": "float", "nanmean": "float",
    "std": "float", "var": "float", "norm": "float", "logsumexp": "float", "amax": "same",
    "amin": "same", "all": "bool", "any": "bool", "argmax": "index", "argmin": "index",
    "count_nonzero": "index",
}  # fmt: skip


def matmul_shape(a: tuple[IntLike, ...], b: tuple[IntLike, ...]) -> tuple[IntLike, ...]:
    """torch.matmul's result shape (1-d operands, batch dimensions broadcast).

    Raises:
        ValueError: a 0-d operand, or inner sizes that differ.
    """
    if not a or not b:
        raise ValueError(
            f"FakeTensor.matmul: both operands need a dimension, got shapes {a!r} and {b!r}. "
            "torch.matmul refuses 0-d tensors. Use * for a scalar product."
        )
    left = (1, *a) if len(a) == 1 else a
    right = (*b, 1) if len(b) == 1 else b
    from customop.tensor._check import check  # noqa: PLC0415 -- small module, no cycle risk

    inner_a, inner_b = left[-1], right[-2]
    same = inner_a == inner_b
    if isinstance(same, bool) and not same:
        raise ValueError(
            f"FakeTensor.matmul: shapes {a!r} and {b!r} cannot be multiplied ({inner_a} != "
            f"{inner_b}). The last size of the first must be the second-to-last of the "
            "second. Fix the shapes."
        )
    check(same)
    batch = broadcast_shapes(left[:-2], right[:-2])
    shape = (*batch, left[-2], right[-1])
    if len(a) == 1:
        shape = (*shape[:-2], shape[-1])
    if len(b) == 1:
        shape = shape[:-1]
    return shape


class FakeTensorReduce(FakeFields):
    """Reduction, product and split methods of `FakeTensor` (a mixin)."""

    __slots__ = ()

    if TYPE_CHECKING:

        def transpose(self, dim0: int, dim1: int) -> FakeTensor: ...
        def reshape(self, *shape: Any) -> FakeTensor: ...
        def expand(self, *sizes: Any) -> FakeTensor: ...

    def _dims(self, dim: object, api: str) -> list[int]:
        if dim is None or (isinstance(dim, tuple | list) and not dim):  # () and [] mean all
            return list(range(len(self._shape)))
        items = dim if isinstance(dim, tuple | list) else (dim,)
        return sorted({self._dim_index(d, api) for d in items}) if self._shape else []

    def _reduced(self, name: str, dim: object, keepdim: bool, kind: DTypeLike | None) -> FakeTensor:
        dims = self._dims(dim, f"FakeTensor.{name}")
        if keepdim:
            shape = tuple(1 if i in dims else s for i, s in enumerate(self._shape))
        else:
            shape = tuple(s for i, s in enumerate(self._shape) if i not in dims)
        result = self._view(shape)
        rule = REDUCTIONS[name]
        if kind is not None:
            result._dtype = to_dtype(kind, api=f"FakeTensor.{name}")
        elif rule == "sum":
            result._dtype = _INT64 if category(self._dtype) <= 1 else self._dtype
        elif rule == "float":
            result._dtype = to_float(self._dtype)
        elif rule in ("bool", "index"):
            result._dtype = _BOOL if rule == "bool" else _INT64
        return result

    def _reduction(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> FakeTensor:
        dim = kwargs.get("dim", kwargs.get("axis", args[0] if args else None))
        if name == "norm":  # norm(p="fro", dim=None, keepdim=False, dtype=None)
            dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        keepdim = bool(kwargs.get("keepdim", False))
        return self._reduced(name, dim, keepdim, kwargs.get("dtype"))

    def max(self, *args: Any, **kwargs: Any) -> Any:
        """torch's ``max``: of everything (0-d), along ``dim`` (values, indices), elementwise."""
        return self._extreme("amax", args, kwargs)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        """torch's ``min``: of everything (0-d), along ``dim`` (values, indices), elementwise."""
        return self._extreme("amin", args, kwargs)

    def _extreme(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        dim = kwargs.get("dim", args[0] if args else None)
        if dim is None:
            return self._reduced(name, None, False, None)
        if metadata_of(dim) is not None:  # max(other): elementwise
            shape = broadcast_shapes(self._shape, metadata_of(dim)[0])  # type: ignore[index]
            result = self._view(shape)
            result._dtype = promote_types(self._dtype, metadata_of(dim)[1])  # type: ignore[index]
            return result
        keepdim = bool(kwargs.get("keepdim", args[1] if len(args) > 1 else False))
        values = self._reduced(name, dim, keepdim, None)
        return values, self._reduced("argmax", dim, keepdim, None)

    def softmax(self, dim: int, dtype: DTypeLike | None = None, **kwargs: Any) -> FakeTensor:
        """The same shape, a floating dtype (``dtype`` when given); torch's other keywords
        (``_stacklevel``) change nothing."""
        result = self._view(self._shape)
        result._dtype = to_float(self._dtype) if dtype is None else to_dtype(dtype)
        return result

    log_softmax = softmax

    def cumsum(self, dim: int, *, dtype: DTypeLike | None = None) -> FakeTensor:
        """The same shape; ints and bools accumulate in int64, as in torch."""
        result = self._view(self._shape)
        if dtype is not None:
            result._dtype = to_dtype(dtype)
        elif category(self._dtype) <= 1:
            result._dtype = _INT64
        return result

    cumprod = cumsum

    # -- matrix products ---------------------------------------------------------------

    def matmul(self, other: Any) -> FakeTensor:
        """torch.matmul's result: broadcast batch dimensions, promoted dtype."""
        meta = metadata_of(other)
        if meta is None:
            raise TypeError(
                f"FakeTensor.matmul: {other!r:.60} is not a tensor. A matrix product takes two "
                "tensors. Pass a fake or an array."
            )
        result = self._view(matmul_shape(self._shape, meta[0]))
        result._dtype = promote_types(self._dtype, meta[1])
        return result

    __matmul__ = matmul
    mm = matmul
    bmm = matmul

    def __rmatmul__(self, other: Any) -> FakeTensor:
        meta = metadata_of(other)
        if meta is None:
            return NotImplemented
        result = self._view(matmul_shape(meta[0], self._shape))
        result._dtype = promote_types(self._dtype, meta[1])
        return result

    # -- splits ------------------------------------------------------------------------

    def _concrete(self, size: IntLike, api: str) -> int:
        number = as_int(size)
        if number is None or isinstance(size, SymInt):
            raise ValueError(
                f"FakeTensor.{api}: size {size} is symbolic. How many pieces the split makes "
                "depends on its value, which a fake does not know. Split along a dimension "
                "with a concrete size, or compute the pieces' shapes in the fake impl."
            )
        return number

    def _pieces(self, dim: int, lengths: Sequence[IntLike]) -> tuple[FakeTensor, ...]:
        pieces: list[FakeTensor] = []
        start: IntLike = 0
        for length in lengths:
            pieces.append(self.narrow(dim, start, length))
            start = start + length
        return tuple(pieces)

    def split(self, split_size: Any, dim: int = 0) -> tuple[FakeTensor, ...]:
        """torch's ``split``: pieces of ``split_size`` (the last may be shorter), or of sizes."""
        index = self._dim_index(dim, "FakeTensor.split")
        if isinstance(split_size, Sequence):
            return self._pieces(index, list(split_size))
        total = self._concrete(self._shape[index], "split")
        step = self._concrete(split_size, "split")
        lengths = [min(step, total - start) for start in range(0, total, step)] or [0]
        return self._pieces(index, lengths)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[FakeTensor, ...]:
        """torch's ``chunk``: ``ceil(size / chunks)``-long pieces."""
        index = self._dim_index(dim, "FakeTensor.chunk")
        total = self._concrete(self._shape[index], "chunk")
        step = max(1, -(-total // chunks))
        return self.split(step, index)

    def tensor_split(self, sections: Any, dim: int = 0) -> tuple[FakeTensor, ...]:
        """torch's ``tensor_split``: ``n`` near-equal pieces, or pieces between indices."""
        index = self._dim_index(dim, "FakeTensor.tensor_split")
        size = self._shape[index]
        if isinstance(sections, Sequence):
            bounds = [0, *sections, size]
            lengths = [sym_min(b, size) - sym_min(a, size) for a, b in itertools.pairwise(bounds)]
            return self._pieces(index, [length if _positive(length) else 0 for length in lengths])
        total = self._concrete(size, "tensor_split")
        count = self._concrete(sections, "tensor_split")
        base, extra = divmod(total, count)
        return self._pieces(index, [base + 1 if i < extra else base for i in range(count)])

    def unbind(self, dim: int = 0) -> tuple[FakeTensor, ...]:
        """One fake per index of ``dim``, without that dimension."""
        index = self._dim_index(dim, "FakeTensor.unbind")
        count = self._concrete(self._shape[index], "unbind")
        return tuple(self.select(index, i) for i in range(count))

    def narrow(self, dim: int, start: IntLike, length: IntLike) -> FakeTensor:
        """``length`` entries of ``dim`` from ``start``: a view with the same strides."""
        axis = self._dim_index(dim, "FakeTensor.narrow")
        shape = (*self._shape[:axis], length, *self._shape[axis + 1 :])
        return self._view(shape, self._layout())

    def select(self, dim: int, index: IntLike) -> FakeTensor:
        """``x[..., index, ...]`` along ``dim``: that dimension dropped."""
        axis = self._dim_index(dim, "FakeTensor.select")
        strides = self._layout()
        return self._view(
            self._shape[:axis] + self._shape[axis + 1 :], strides[:axis] + strides[axis + 1 :]
        )

    # -- other tensors' shapes, matrix transposes ---------------------------------------

    def t(self) -> FakeTensor:
        """The transpose of a fake with at most 2 dimensions."""
        return self.transpose(0, 1) if len(self._shape) == 2 else self._view(self._shape)

    @property
    def T(self) -> FakeTensor:  # noqa: N802 -- torch's name
        """All dimensions reversed."""
        order = tuple(reversed(range(len(self._shape))))
        strides = self._layout()
        return self._view(tuple(self._shape[i] for i in order), tuple(strides[i] for i in order))

    @property
    def mT(self) -> FakeTensor:  # noqa: N802 -- torch's name
        """The last two dimensions swapped."""
        return self.transpose(-2, -1)

    def view_as(self, other: Any) -> FakeTensor:
        """Reshaped to ``other``'s shape."""
        return self.reshape(tuple(other.shape))

    reshape_as = view_as

    def expand_as(self, other: Any) -> FakeTensor:
        """Broadcast to ``other``'s shape."""
        return self.expand(tuple(other.shape))


def _reduction_method(name: str) -> Any:
    def reduce(self: FakeTensorReduce, *args: Any, **kwargs: Any) -> FakeTensor:
        return self._reduction(name, args, kwargs)

    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = f"torch's ``Tensor.{name}``: a fake of the result's metadata."
    return reduce


for _name in REDUCTIONS:
    if _name not in vars(FakeTensorReduce):
        setattr(FakeTensorReduce, _name, _reduction_method(_name))


def _positive(length: IntLike) -> bool:
    return not isinstance(length, int) or length > 0

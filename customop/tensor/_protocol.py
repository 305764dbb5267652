"""The structural types of tensors: `Tensor`, `TensorOps` and the type variable `AnyTensor`.

Which annotation to write where (docs/typing.md, measured with ``mypy --strict``):

* a kernel: the array type it receives (``numpy.typing.NDArray[...]``,
  ``torch.Tensor``), so its body is checked by that library's own stubs;
* an op of one array library, and its fake impl: that same type; a fake stands
  in for the array it fakes (``empty_like``, ``new_empty`` and
  ``FakeTensorMode.from_real`` return their argument's type);
* an op that serves several array libraries: `AnyTensor`, so a call returns
  the caller's own array type, and bodies may use `TensorOps`' operators.

`Tensor` itself is what every array and a `FakeTensor` have: shape, dtype,
ndim. A body that computes with ``*`` or ``[]`` needs `TensorOps`.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

from typing_extensions import Self

from customop.schema import add_built_in

__all__ = ["AnyTensor", "Tensor", "TensorOps"]


@runtime_checkable
class Tensor(Protocol):
    """Anything array-like with a shape and a dtype: ``numpy.ndarray``, a torch or
    cupy array, a user array type registered as a backend, or a `FakeTensor`.

    Used in annotations of ``@custom_op`` functions, where it infers as the
    schema type ``Tensor``. It has no operators (a `FakeTensor` has none): for
    code that computes, see `TensorOps` and `AnyTensor`.
    """

    @property
    def shape(self) -> Any:
        """The array's shape, a sequence of ints (or ``SymInt`` for a fake tensor)."""

    @property
    def dtype(self) -> Any:
        """The array's element type."""

    @property
    def ndim(self) -> int:
        """The number of dimensions."""


class TensorOps(Tensor, Protocol):
    """A `Tensor` with the operators numpy, torch and cupy arrays share, for mypy.

    ``+ - * / ** @`` (and their reflected forms), unary ``-`` and ``+``, and
    indexing, each giving the same array type back (``Self``): numpy arrays of
    every dtype and ``torch.Tensor`` satisfy it, so a body written with these
    operators type-checks once for all of them. Comparisons, ``//``, ``%``
    and ``abs`` are left out: their numpy results change the dtype (``<``
    gives bool, ``abs`` of complex gives float) or do not exist for complex.
    `FakeTensor` is not a `TensorOps` (it has no values to compute with). It
    infers as the schema type ``Tensor``.
    """

    def __add__(self, other: Any, /) -> Self: ...

    def __radd__(self, other: Any, /) -> Self: ...

    def __sub__(self, other: Any, /) -> Self: ...

    def __rsub__(self, other: Any, /) -> Self: ...

    def __mul__(self, other: Any, /) -> Self: ...

    def __rmul__(self, other: Any, /) -> Self: ...

    def __truediv__(self, other: Any, /) -> Self: ...

    def __rtruediv__(self, other: Any, /) -> Self: ...

    def __pow__(self, other: Any, /) -> Self: ...

    def __rpow__(self, other: Any, /) -> Self: ...

    def __matmul__(self, other: Any, /) -> Self: ...

    def __neg__(self) -> Self: ...

    def __pos__(self) -> Self: ...

    def __getitem__(self, index: Any, /) -> Self: ...


#: The array type of an op that serves several array libraries, like ``typing.AnyStr``:
#: ``def scale(x: AnyTensor, factor: float) -> AnyTensor`` returns a numpy array for a
#: numpy argument and a torch tensor for a torch one. Bound to `TensorOps`; infers as
#: the schema type ``Tensor``.
AnyTensor = TypeVar("AnyTensor", bound=TensorOps)

# `x: customop.Tensor` infers as the schema type Tensor. The schema layer cannot
# import this (upper) layer, so the mapping is registered here, at import.
add_built_in(Tensor, "Tensor")
add_built_in(TensorOps, "Tensor")
add_built_in(AnyTensor, "Tensor")

"""The structural type every tensor customop handles satisfies."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from customop.schema import add_built_in

__all__ = ["Tensor"]


@runtime_checkable
class Tensor(Protocol):
    """Anything array-like with a shape and a dtype: ``numpy.ndarray``, a torch or
    cupy array, a user array type registered as a backend, or a `FakeTensor`.

    Used in annotations of ``@custom_op`` functions, where it infers as the
    schema type ``Tensor``.
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


# `x: customop.Tensor` infers as the schema type Tensor. The schema layer cannot
# import this (upper) layer, so the mapping is registered here, at import.
add_built_in(Tensor, "Tensor")

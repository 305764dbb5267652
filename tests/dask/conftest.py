"""A fresh dispatcher with the Dask backend per test, and a small op set defined in it."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import customop
from customop.dispatch import Dispatcher
from customop.tensor import install_backends

pytest.importorskip("dask.array")


@pytest.fixture
def dispatcher() -> Iterator[Dispatcher]:
    """A dispatcher with the tensor backends and the Dask backend, as customop.dispatcher has."""
    fresh = Dispatcher()
    backends = install_backends(fresh)
    dask_backend = customop.dask.install(fresh)
    yield fresh
    dask_backend.remove()
    backends.remove()


def _broadcast(left: tuple[Any, ...], right: tuple[Any, ...]) -> tuple[Any, ...]:
    """numpy's broadcast of two shapes whose sizes may be symbols (unknown chunk sizes)."""
    ndim = max(len(left), len(right))
    left = (1,) * (ndim - len(left)) + tuple(left)
    right = (1,) * (ndim - len(right)) + tuple(right)
    return tuple(
        b if isinstance(a, int) and a == 1 else a for a, b in zip(left, right, strict=True)
    )


@dataclass
class Ops:
    """Ops defined in the test's dispatcher; ``calls`` counts real kernel runs."""

    scale: Any
    matmul: Any
    softmax: Any
    total: Any
    positive: Any
    plain: Any
    calls: list[str] = field(default_factory=list)


@pytest.fixture
def ops(dispatcher: Dispatcher) -> Ops:
    calls: list[str] = []

    @customop.custom_op("dk::scale", mutates_args=(), tags=("pointwise",), dispatcher=dispatcher)
    def scale(x: np.ndarray, y: np.ndarray, alpha: float = 1.0) -> np.ndarray:
        calls.append("scale")
        return (x * y * alpha).astype(np.result_type(x, y))

    @scale.register_fake
    def _(x: Any, y: Any, alpha: float = 1.0) -> Any:
        return customop.empty(_broadcast(x.shape, y.shape), dtype=x.dtype)

    @customop.custom_op("dk::matmul", mutates_args=(), dispatcher=dispatcher)
    def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        calls.append("matmul")
        return a @ b

    @matmul.register_fake
    def _(a: Any, b: Any) -> Any:
        return customop.empty((a.shape[0], b.shape[1]), dtype=a.dtype)

    matmul.register_blockwise("ij,jk->ik")

    @customop.custom_op("dk::softmax", mutates_args=(), dispatcher=dispatcher)
    def softmax(x: np.ndarray) -> np.ndarray:
        calls.append("softmax")
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]

    @softmax.register_fake
    def _(x: Any) -> Any:
        return customop.empty_like(x)

    softmax.register_blockwise("iJ->iJ")

    @customop.custom_op("dk::total", mutates_args=(), dispatcher=dispatcher)
    def total(x: np.ndarray) -> np.ndarray:
        calls.append("total")
        return np.asarray(x.sum(axis=0))

    @total.register_fake
    def _(x: Any) -> Any:
        return customop.empty((x.shape[1],), dtype=x.dtype)

    total.register_blockwise("ij->j")

    @customop.custom_op("dk::positive", mutates_args=(), dispatcher=dispatcher)
    def positive(x: np.ndarray) -> np.ndarray:
        calls.append("positive")
        return x[x > 0]

    @positive.register_fake
    def _(x: Any) -> Any:
        return customop.empty((customop.get_ctx().new_dynamic_size(),), dtype=x.dtype)

    positive.register_blockwise("i->i")

    @customop.custom_op("dk::plain", mutates_args=(), dispatcher=dispatcher)
    def plain(x: np.ndarray) -> np.ndarray:
        calls.append("plain")
        return np.sort(x, axis=None)

    @plain.register_fake
    def _(x: Any) -> Any:
        return customop.empty((math.prod(x.shape),), dtype=x.dtype)

    return Ops(scale, matmul, softmax, total, positive, plain, calls)

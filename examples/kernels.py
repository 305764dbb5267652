"""numpy kernels for the operators declared in examples/ops.yaml.

Each kernel takes the operator's arguments as its schema names them and
returns numpy arrays. The generated registration module imports this module
and registers these very functions, so a call runs them directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]

#: ``int reduction=Mean``: torch's Reduction enum, by value.
NONE, MEAN, SUM = 0, 1, 2


def add(x: Array, y: Array, *, alpha: complex = 1) -> Array:
    return np.asarray(x + alpha * y)


def add_out(x: Array, y: Array, *, alpha: complex = 1, out: Array) -> Array:
    np.add(x, alpha * y, out=out)
    return out


def scale(x: Array, factor: float = 2.0) -> Array:
    return np.asarray(x * factor)


def mse_loss(input: Array, target: Array, reduction: int = MEAN) -> Array:
    squared = (input - target) ** 2
    if reduction == MEAN:
        return np.asarray(squared.mean())
    if reduction == SUM:
        return np.asarray(squared.sum())
    return np.asarray(squared)


def mean_std(x: Array, dim: int | None = None) -> tuple[Array, Array]:
    return np.asarray(x.mean(axis=dim)), np.asarray(x.std(axis=dim))


def stack(tensors: Sequence[Array], dim: int = 0) -> Array:
    return np.stack(tensors, axis=dim)

"""Ops for the cluster test, in customop.dispatcher: workers import this module to find them."""

from __future__ import annotations

from typing import Any

import numpy as np

import customop


@customop.custom_op("dkcluster::scale", mutates_args=(), tags=("pointwise",))
def scale(x: np.ndarray, alpha: float) -> np.ndarray:
    return x * alpha


@scale.register_fake
def _(x: Any, alpha: float) -> Any:
    return customop.empty_like(x)


@customop.custom_op("dkcluster::matmul", mutates_args=())
def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a @ b


@matmul.register_fake
def _(a: Any, b: Any) -> Any:
    return customop.empty((a.shape[0], b.shape[1]), dtype=a.dtype)


matmul.register_blockwise("ij,jk->ik")


@customop.custom_op("dkcluster::softmax", mutates_args=())
def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]


@softmax.register_fake
def _(x: Any) -> Any:
    return customop.empty_like(x)


softmax.register_blockwise("iJ->iJ")


@customop.custom_op("dkcluster::colsum", mutates_args=())
def colsum(x: np.ndarray) -> np.ndarray:
    return np.asarray(x.sum(axis=0))


@colsum.register_fake
def _(x: Any) -> Any:
    return customop.empty((x.shape[1],), dtype=x.dtype)


colsum.register_blockwise("ij->j")


def pipeline(x: Any, w: Any) -> Any:
    """Contracted matmul, pointwise scale, whole-row softmax, column-sum reduction."""
    return colsum(softmax(scale(matmul(x, w), 0.5)))

"""Tensors: the Tensor protocol (devices, dtypes, adapters and FakeTensor come later)."""

from customop.tensor._protocol import Tensor

__all__ = ["Tensor"]

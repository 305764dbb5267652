"""Array test doubles for user backends."""

from __future__ import annotations

from typing import Any

import numpy as np


class ToyArray:
    """A user array type: numpy data on a pretend device with an index."""

    def __init__(self, data: Any, index: int = 0) -> None:
        self.data = np.asarray(data)
        self.index = index

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return self.data.ndim


class SubToyArray(ToyArray):
    """Served by ToyArray's registration (nearest base)."""

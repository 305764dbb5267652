"""A user backend: LoggedArray, a numpy-backed array type that logs every op run on it.

Run it with ``python examples/user_backend.py``. It shows the four steps of
adding a backend to customop:

1. name a PrivateUse backend (``rename_backend("PrivateUse1", "toy")``), so
   "toy" is a device type and a dispatch key name;
2. register the array type on it (``register_backend``), with a function that
   allocates arrays, so that ``customop.empty_like`` works on it;
3. give ops kernels for it (``register_kernel("toy")``), and one boxed
   fallback that serves every other op by running its CPU kernel on the data;
4. one fake impl (with ``empty_like``) gives shapes on every device, "toy"
   included, without data.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import customop
from customop import Tensor
from customop.dispatch import DispatchKey, DispatchKeySet, OperatorHandle
from customop.tensor import (
    Device,
    FakeTensor,
    ShapeEnv,
    device_of,
    dtype,
    empty_like,
    register_backend,
)


class LoggedArray:
    """numpy data on the "toy" device; every kernel that runs on it writes to ``LOG``."""

    def __init__(self, data: Any) -> None:
        self.data = np.asarray(data)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return self.data.ndim

    def __repr__(self) -> str:
        return f"LoggedArray({self.data.tolist()})"


LOG: list[str] = []


def allocate(shape: tuple[int, ...], element: dtype, device: Device) -> LoggedArray:
    return LoggedArray(np.empty(shape, dtype=element.numpy))


# 1 and 2: the backend and its array type.
customop.dispatcher.rename_backend("PrivateUse1", "toy")
register_backend(LoggedArray, "toy", empty=allocate)


# 3: an op with a numpy kernel for "cpu" and its own kernel for "toy"...
def data(x: Tensor) -> np.ndarray[Any, Any]:
    return x.data if isinstance(x, LoggedArray) else np.asarray(x)


@customop.custom_op("toy_demo::scale", mutates_args=(), device_types="cpu")
def scale(x: Tensor, factor: float) -> Tensor:
    return data(x) * factor


@scale.register_kernel("toy")
def _(x: Tensor, factor: float) -> Tensor:
    LOG.append(f"toy kernel: scale by {factor}")
    return LoggedArray(data(x) * factor)


# ... and an op with a "cpu" kernel only, which the fallback below serves on "toy".
@customop.custom_op("toy_demo::add", mutates_args=(), device_types="cpu")
def add(x: Tensor, y: Tensor) -> Tensor:
    total: Tensor = np.add(data(x), data(y))
    return total


def _unwrap(value: Any) -> Any:
    return value.data if isinstance(value, LoggedArray) else value


def toy_fallback(op: OperatorHandle, keyset: DispatchKeySet, *args: Any, **kwargs: Any) -> Any:
    """Every op without a toy kernel: run its CPU kernel on the numpy data, wrap the result."""
    LOG.append(f"toy fallback: {op.name} runs its CPU kernel")
    cpu = DispatchKeySet(DispatchKey.CPU)
    result = op.redispatch(cpu, *map(_unwrap, args), **{k: _unwrap(v) for k, v in kwargs.items()})
    return LoggedArray(result) if isinstance(result, np.ndarray) else result


fallbacks = customop.Library("toy_demo", "FRAGMENT")
fallbacks.fallback(toy_fallback, "toy")


# 4: one fake impl for every device.
@scale.register_fake
def _(x: Tensor, factor: float) -> Tensor:
    out: Tensor = empty_like(x)  # a FakeTensor for a fake x, on x's device
    return out


def main() -> None:
    x = LoggedArray([1.0, 2.0, 3.0])
    print("device of x:", device_of(x))
    print("scale on numpy:", scale(np.array([1.0, 2.0]), 10.0))
    print("scale on toy:  ", scale(x, 10.0))
    print("add on toy:    ", add(x, x))
    print("empty_like(x): ", type(empty_like(x)).__name__)
    s0 = ShapeEnv().new_symint()
    for device in ("cpu", "cuda:1", "toy"):
        print("fake on", f"{device + ':':7}", scale(FakeTensor((s0, 3), device=device), 2.0))
    print("log:")
    for line in LOG:
        print("  " + line)


if __name__ == "__main__":
    main()

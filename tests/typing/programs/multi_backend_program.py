"""An op for several array libraries: annotated with ``AnyTensor``, like ``typing.AnyStr``.

A call returns the caller's own array type (numpy in, numpy out; torch in,
torch out), the body may use the operators of `TensorOps`, and the fake and
the kernels are generic too (mypy holds them to the op's signature). Run and
type-checked by tests/typing/test_programs.py where torch is installed.
"""

# requires: torch

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import torch

import customop
from customop.tensor import AnyTensor


@customop.custom_op("typing_multi::axpy", mutates_args=())
def axpy(a: float, x: AnyTensor, y: AnyTensor) -> AnyTensor:
    return a * x + y


@axpy.register_fake
def _(a: float, x: AnyTensor, y: AnyTensor) -> AnyTensor:
    return customop.empty_like(x)


# A cpu kernel gets numpy arrays and torch cpu tensors alike: it is generic too.
@axpy.register_kernel("cpu")
def _(a: float, x: AnyTensor, y: AnyTensor) -> AnyTensor:
    return x * a + y


def main() -> None:
    x = np.ones(3)
    from_numpy: npt.NDArray[Any] = axpy(2.0, x, x)
    from_torch: torch.Tensor = axpy(2.0, torch.ones(3), torch.ones(3))
    print(from_numpy.tolist(), from_torch.tolist())
    with customop.FakeTensorMode() as mode:
        print(axpy(2.0, mode.from_real(x), mode.from_real(x)))


if __name__ == "__main__":
    main()

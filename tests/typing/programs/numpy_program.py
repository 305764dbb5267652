"""A numpy user's program: the op, its kernel and its fake are annotated with numpy's type.

A fake stands in for the array it fakes, so the fake impl carries the op's
annotations, and ``empty_like`` / ``new_empty`` / ``mode.from_real`` keep
their argument's type. Run by tests/typing/test_programs.py (and type-checked
there with ``mypy --strict``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

import customop

Array = npt.NDArray[Any]


@customop.custom_op("typing_numpy::scale", mutates_args=())
def scale(x: Array, factor: float = 2.0) -> Array:
    return x * factor


@scale.register_fake
def _(x: Array, factor: float = 2.0) -> Array:
    return customop.empty_like(x)


@customop.custom_op("typing_numpy::head", mutates_args=(), device_types="cpu")
def head(x: Array, n: int) -> Array:
    return x[:n].copy()


@head.register_fake
def _(x: Array, n: int) -> Array:
    return customop.new_empty(x, (n, *x.shape[1:]))


def main() -> None:
    x = np.arange(6.0).reshape(3, 2)
    y: Array = head(scale(x, 3.0), 2)
    print(y.tolist())
    with customop.FakeTensorMode() as mode:
        print(head(scale(mode.from_real(x)), 1))
    graph = customop.trace(lambda a: head(scale(a), 2), x)
    print(graph)
    print(customop.opcheck(head, (x, 2)))


if __name__ == "__main__":
    main()

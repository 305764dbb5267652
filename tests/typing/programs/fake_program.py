"""Fake impls on their own: a data-dependent size, a shape check, and a trace.

``nonzero_rows`` cannot know its output's length without the data: its fake
asks ``get_ctx()`` for a symbolic size. Run and type-checked by
tests/typing/test_programs.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

import customop

Array = npt.NDArray[Any]


@customop.custom_op("typing_fake::nonzero_rows", mutates_args=())
def nonzero_rows(x: Array) -> Array:
    return x[np.any(x != 0, axis=1)]


@nonzero_rows.register_fake
def _(x: Array) -> Array:
    rows = customop.get_ctx().new_dynamic_size(max=x.shape[0])
    return customop.new_empty(x, (rows, x.shape[1]))


@customop.custom_op("typing_fake::add", mutates_args=())
def add(a: Array, b: Array) -> Array:
    return a + b


@add.register_fake
def _(a: Array, b: Array) -> Array:
    customop.check(a.shape == b.shape, lambda: f"add: shapes {a.shape} and {b.shape} differ")
    return customop.empty_like(a)


def main() -> None:
    x = np.array([[1.0, 0.0], [0.0, 0.0], [2.0, 3.0]])
    with customop.FakeTensorMode() as mode:
        fake = mode.from_real(x)
        rows = nonzero_rows(fake)
        print(rows)
        print(add(rows, rows))
    print(customop.trace(lambda a: nonzero_rows(add(a, a)), x))


if __name__ == "__main__":
    main()

"""numpy ops with fake impls, including a data-dependent output size.

    python examples/fake_shapes.py

Runs the ops on real arrays, then on fakes under FakeTensorMode (shapes,
dtypes and devices only, with a symbolic size for `nonzero`), then checks
them with opcheck.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from customop import Dispatcher, FakeTensorMode, custom_op, empty, empty_like, get_ctx, opcheck
from customop.tensor import install_backends

d = Dispatcher()
install_backends(d)


@custom_op("shapes::normalize", mutates_args=(), dispatcher=d)
def normalize(x: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    result: np.ndarray = (x - x.mean()) / (x.std() + eps)
    return result


@normalize.register_fake
def _(x: Any, eps: float = 1e-5) -> Any:
    return empty_like(x)


@custom_op("shapes::nonzero", mutates_args=(), dispatcher=d)
def nonzero(x: np.ndarray) -> np.ndarray:
    return np.argwhere(x)


@nonzero.register_fake
def _nonzero(x: Any) -> Any:
    # How many entries are nonzero depends on the data: a fake cannot know.
    count = get_ctx().new_dynamic_size(min=0, max=x.numel())
    return empty((count, x.ndim), dtype="int64", device=x.device)


def main() -> None:
    x = np.array([[0.0, 1.0], [2.0, 0.0], [3.0, 4.0]])
    print("real:", nonzero(normalize(x) > 0).tolist())
    with FakeTensorMode() as mode:
        fake = mode.from_real(x)
        print("fake normalize:", normalize(fake))
        found = nonzero(fake)
        print("fake nonzero:  ", found)
        print("rows, doubled: ", found.shape[0] * 2)
    print("opcheck normalize:", opcheck(normalize, (x,)))
    print("opcheck nonzero:  ", opcheck(nonzero, (x,), checks=["test_schema", "test_faketensor"]))


if __name__ == "__main__":
    main()

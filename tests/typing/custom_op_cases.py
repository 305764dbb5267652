"""Typed uses of @custom_op: lines with an error marker comment must be mypy errors; no others."""

from __future__ import annotations

import numpy as np
from typing_extensions import assert_type, reveal_type

from customop.dispatch import RegistrationHandle
from customop.library import custom_op, handle_of
from customop.tensor import Tensor


@custom_op("typing::scale", mutates_args=())
def scale(x: np.ndarray, factor: float, *, bias: float = 0.0) -> np.ndarray:
    return x * factor + bias


def plain(x: Tensor, n: int) -> Tensor:
    return x


times = custom_op("typing::times", plain, mutates_args=())
array = np.zeros(3)

reveal_type(times)  # N: Revealed type is "customop.library._custom_op.CustomOpDef[[x: customop.tensor._protocol.Tensor, n: int], customop.tensor._protocol.Tensor]"
result = scale(array, 2.0, bias=1.0)
reveal_type(result)  # N: Revealed type is "numpy.ndarray[tuple[Any, ...], numpy.dtype[Any]]"
assert_type(times(array, 3), Tensor)

scale(array, "2")  # E: arg-type
scale(array)  # E: call-arg
scale(array, 2.0, 1.0)  # E: call-arg
scale(array, 2.0, biass=1.0)  # E: call-arg
times(array, 1.5)  # E: arg-type
text: str = scale(array, 2.0)  # E: assignment


def fake(x: np.ndarray, factor: float, *, bias: float = 0.0) -> np.ndarray:
    return x


returned = scale.register_fake(fake)
handle = handle_of(returned)
assert_type(handle, RegistrationHandle)
returned(array, 2.0, bias=1.0)
returned(array, "2")  # E: arg-type
handle.remove()
handle.remov()  # E: attr-defined


@scale.register_kernel("cpu")
def _(x: np.ndarray, factor: float, *, bias: float = 0.0) -> np.ndarray:
    return x


assert_type(handle_of(_), RegistrationHandle)
_(array, 2.0)
_(array)  # E: call-arg
scale.register_kernel("cpu", plain)  # E: arg-type

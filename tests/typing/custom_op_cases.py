"""Typed uses of @custom_op: lines with an error marker comment must be mypy errors; no others."""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import assert_type, reveal_type

from customop.dispatch import Dispatcher, RegistrationHandle
from customop.library import custom_op, handle_of
from customop.tensor import Tensor

# Spelled out: a bare np.ndarray means ndarray[tuple[Any, ...], dtype[Any]] from numpy 2.3,
# and is an error (missing type arguments) before it; Python 3.10 gets numpy 2.2.
Array: TypeAlias = "np.ndarray[Any, Any]"


@custom_op("typing::scale", mutates_args=())
def scale(x: Array, factor: float, *, bias: float = 0.0) -> Array:
    return x * factor + bias


def plain(x: Tensor, n: int) -> Tensor:
    return x


times = custom_op("typing::times", plain, mutates_args=())
array = np.zeros(3)

reveal_type(times)  # N: Revealed type is "customop.library._custom_op.CustomOpDef[[x: customop.tensor._protocol.Tensor, n: int], customop.tensor._protocol.Tensor]"
result = scale(array, 2.0, bias=1.0)
reveal_type(result)  # N: Revealed type is "numpy.ndarray[Any, Any]"
assert_type(times(array, 3), Tensor)

scale(array, "2")  # E: arg-type
scale(array)  # E: call-arg
scale(array, 2.0, 1.0)  # E: call-arg
scale(array, 2.0, biass=1.0)  # E: call-arg
times(array, 1.5)  # E: arg-type
text: str = scale(array, 2.0)  # E: assignment


def fake(x: Array, factor: float, *, bias: float = 0.0) -> Array:
    return x


returned = scale.register_fake(fake)
handle = handle_of(returned)
assert_type(handle, RegistrationHandle)
returned(array, 2.0, bias=1.0)
returned(array, "2")  # E: arg-type
handle.remove()
handle.remov()  # E: attr-defined


@scale.register_kernel("cpu")
def _(x: Array, factor: float, *, bias: float = 0.0) -> Array:
    return x


assert_type(handle_of(_), RegistrationHandle)
_(array, 2.0)
_(array)  # E: call-arg
scale.register_kernel("cpu", plain)  # E: arg-type


# mutates_args takes any collection of names, as torch's custom_op does: a set too.
@custom_op("typing::scale_", mutates_args={"x"}, dispatcher=Dispatcher())
def scale_(x: Array, factor: float) -> None:
    x *= factor


reveal_type(scale_)  # N: Revealed type is "customop.library._custom_op.CustomOpDef[[x: numpy.ndarray[Any, Any], factor: float], None]"
scale_(array, 2.0)
custom_op("typing::thrice", plain, mutates_args=3)  # E: call-overload

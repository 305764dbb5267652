"""Registered functions are held to the op's signature; factories keep their argument's type.

Lines with an error marker comment must be mypy errors; no others (see test_mypy.py).
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import reveal_type

from customop.fake import FakeTensorMode
from customop.library import custom_op, register_autograd, register_fake, register_kernel
from customop.tensor import AnyTensor, FakeTensor, ShapeEnv, empty, empty_like, new_empty
from customop.vmap import VmapInfo, register_vmap

Array: TypeAlias = "np.ndarray[Any, Any]"
array: Array = np.zeros(3)


@custom_op("regcases::scale", mutates_args=())
def scale(x: Array, factor: float) -> Array:
    return x * factor


# -- register_fake: the fake impl has the op's parameters and result --------------------


def fake_ok(x: Array, factor: float) -> Array:
    return empty_like(x)


def fake_missing(x: Array) -> Array:
    return empty_like(x)


def fake_mistyped(x: Array, factor: str) -> Array:
    return empty_like(x)


def fake_returns_int(x: Array, factor: float) -> int:
    return 0


reveal_type(scale.register_fake(fake_ok))  # N: Revealed type is "def (x: numpy.ndarray[Any, Any], factor: float) -> numpy.ndarray[Any, Any]"
scale.register_fake(fake_missing)  # E: arg-type
scale.register_fake(fake_mistyped)  # E: arg-type
scale.register_fake(fake_returns_int)  # E: arg-type
scale.register_fake(lambda x, factor: empty_like(x))
scale.register_fake(lambda x: empty_like(x))  # E: misc, arg-type


@scale.register_fake  # E: arg-type
def _(x: Array, factor: float, extra: int) -> Array:
    return empty_like(x)


# -- register_kernel and the free functions -----------------------------------------------

scale.register_kernel("cpu", fake_missing)  # E: arg-type
# The free functions' call form: mypy says it cannot infer the op's signature from both.
register_kernel(scale, "cpu", fake_mistyped)  # E: misc
register_fake(scale, fake_returns_int)  # E: misc
reveal_type(register_fake(scale, fake_ok))  # N: Revealed type is "def (x: numpy.ndarray[Any, Any], factor: float) -> numpy.ndarray[Any, Any]"
register_fake("regcases::scale", fake_missing)  # a name has no Python signature to check


@register_fake(scale)  # E: arg-type
def _(x: Array) -> Array:
    return empty_like(x)


@register_kernel(scale, "cpu")
def _(x: Array, factor: float) -> Array:
    return x * factor


# -- register_autograd: backward takes one gradient per output -----------------------------


def backward(ctx: Any, grad: Array) -> tuple[Array, None]:
    return grad, None


def setup(ctx: Any, inputs: tuple[Any, ...], output: Array) -> None:
    ctx.save_for_backward(*inputs)


scale.register_autograd(backward, setup_context=setup)
scale.register_autograd(lambda ctx, grad: (grad, None))
scale.register_autograd(lambda ctx: None)  # E: misc, arg-type
scale.register_autograd(backward, setup_context=lambda ctx, inputs: None)  # E: misc, arg-type


def backward_str(ctx: Any, grad: str) -> None:
    return None


scale.register_autograd(backward_str)  # E: arg-type


@custom_op("regcases::split", mutates_args=())
def split(x: Array) -> tuple[Array, Array]:
    return x, x


split.register_autograd(lambda ctx, ga, gb: ga + gb)

# The free function, as torch spells it, checks the same.
register_autograd(scale, backward, setup_context=setup)
register_autograd(scale, lambda ctx, grad: (grad, None))
register_autograd(scale, backward_str)  # E: misc
register_autograd(scale, backward, setup_context=lambda ctx, inputs: None)  # E: misc, arg-type
register_autograd(split, lambda ctx, ga, gb: ga + gb)
register_autograd("regcases::scale", backward_str)  # a name: checked at registration only


# -- register_vmap: the rule takes (info, in_dims) then the op's parameters -----------------


def rule_ok(info: VmapInfo, in_dims: tuple[int | None, ...], x: Array, factor: float) -> tuple[Array, int]:
    return x * factor, 0


def rule_missing(info: VmapInfo, in_dims: tuple[int | None, ...], x: Array) -> tuple[Array, int]:
    return x, 0


def rule_mistyped(info: VmapInfo, in_dims: Any, x: Array, factor: str) -> tuple[Array, int]:
    return x, 0


def rule_no_dims(info: VmapInfo, in_dims: Any, x: Array, factor: float) -> Array:
    return x


def rule_torch_info(info: int, in_dims: Any, x: Array, factor: float) -> tuple[Array, int]:
    return x, 0


scale.register_vmap(rule_ok)
scale.register_vmap(lambda info, in_dims, x, factor: (x * factor, in_dims[0]))
scale.register_vmap(rule_missing)  # E: arg-type
scale.register_vmap(rule_mistyped)  # E: arg-type
scale.register_vmap(rule_no_dims)  # E: arg-type
scale.register_vmap(rule_torch_info)  # E: arg-type
register_vmap(scale, rule_ok)
register_vmap(scale, rule_no_dims)  # E: arg-type
# The two-argument form infers P from both arguments, so mypy takes a rule with a
# parameter too few, as it does for register_fake(op, fn); registration refuses it.
register_vmap(scale, rule_missing)
register_vmap("regcases::scale", rule_missing)  # a name: checked at registration only


@scale.register_vmap
def _(info: VmapInfo, in_dims: Any, x: Array, factor: float) -> tuple[Array, Any]:
    return x * factor, in_dims[0]


@register_vmap(scale)  # E: arg-type
def _(info: VmapInfo, in_dims: Any, x: Array) -> tuple[Array, Any]:
    return x, in_dims[0]


# -- factories and from_real keep the argument's type (a fake stands in for it) -------------

fake = FakeTensor((2, 3))
reveal_type(empty_like(array))  # N: Revealed type is "numpy.ndarray[Any, Any]"
reveal_type(empty_like(fake))  # N: Revealed type is "customop.tensor._fake.FakeTensor"
reveal_type(new_empty(array, (4, 2)))  # N: Revealed type is "numpy.ndarray[Any, Any]"
reveal_type(empty((2, 3)))  # N: Revealed type is "numpy.ndarray[Any, numpy.dtype[Any]]"
reveal_type(empty((2, 3), device="meta"))  # N: Revealed type is "customop.tensor._fake.FakeTensor"
reveal_type(empty((ShapeEnv().new_symint(), 3)))  # N: Revealed type is "customop.tensor._protocol.Tensor"
reveal_type(FakeTensorMode().from_real(array))  # N: Revealed type is "numpy.ndarray[Any, Any]"
empty_like(3)  # E: call-overload

# -- AnyTensor: one op for several array libraries -------------------------------------------


@custom_op("regcases::axpy", mutates_args=())
def axpy(a: float, x: AnyTensor, y: AnyTensor) -> AnyTensor:
    return a * x + y


reveal_type(axpy(2.0, array, array))  # N: Revealed type is "numpy.ndarray[Any, Any]"
axpy(2.0, array, "y")  # E: type-var


@axpy.register_fake
def _(a: float, x: AnyTensor, y: AnyTensor) -> AnyTensor:
    return empty_like(x)


def numpy_only(a: float, x: Array, y: Array) -> Array:
    return a * x + y


axpy.register_kernel("cpu", numpy_only)  # E: arg-type

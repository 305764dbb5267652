"""The transforms on every backend: torch tensors (no torch autograd) and a user array type."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from customop import Tensor, custom_op, empty_like, new_empty
from customop.autograd import grad, vjp
from customop.dispatch import Dispatcher
from customop.tensor import Device, dtype, register_backend


def _define(dispatcher: Dispatcher) -> tuple[Any, Any]:
    """mul and sum with kernels written with operators, so any array type with them works."""

    @custom_op("bk::mul", mutates_args=(), dispatcher=dispatcher)
    def mul(a: Tensor, b: Tensor) -> Tensor:
        return a * b

    @custom_op("bk::sum_like", mutates_args=(), dispatcher=dispatcher)
    def sum_like(x: Tensor) -> Tensor:
        out = new_empty(x, (), dispatcher=dispatcher)  # a 0-d array of x's backend
        out[...] = x.sum()
        return out

    @custom_op("bk::expand_as", mutates_args=(), dispatcher=dispatcher)
    def expand_as(g: Tensor, x: Tensor) -> Tensor:
        out = empty_like(x, dispatcher=dispatcher)
        out[...] = g
        return out

    mul.register_fake(lambda a, b: empty_like(a))
    sum_like.register_fake(lambda x: new_empty(x, ()))
    expand_as.register_fake(lambda g, x: empty_like(x))

    def mul_backward(ctx: Any, g: Any) -> tuple[Any, Any]:
        a, b = ctx.saved_tensors
        return mul(g, b), mul(g, a)

    mul.register_autograd(
        mul_backward, setup_context=lambda ctx, inputs, output: ctx.save_for_backward(*inputs)
    )
    sum_like.register_autograd(
        lambda ctx, g: expand_as(g, ctx.x),
        setup_context=lambda ctx, inputs, output: setattr(ctx, "x", inputs[0]),
    )
    return mul, sum_like


def test_torch_tensors_without_torch_autograd(dispatcher: Dispatcher) -> None:
    torch = pytest.importorskip("torch")
    mul, sum_like = _define(dispatcher)
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    y = torch.tensor([4.0, 5.0, 6.0], dtype=torch.float64)
    gx, gy = grad(lambda a, b: sum_like(mul(mul(a, a), b)), (0, 1), dispatcher=dispatcher)(x, y)
    assert isinstance(gx, torch.Tensor) and not gx.requires_grad
    assert torch.equal(gx, 2 * x * y) and torch.equal(gy, x * x)


class Boxed:
    """A user array type: numpy data behind its own class, with the operators kernels use."""

    def __init__(self, data: Any) -> None:
        self.data = np.asarray(data)

    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: self.data.ndim)

    def __mul__(self, other: Boxed) -> Boxed:
        return Boxed(self.data * other.data)

    def sum(self) -> Boxed:
        return Boxed(self.data.sum())

    def __setitem__(self, index: Any, value: Any) -> None:
        self.data[index] = value.data if isinstance(value, Boxed) else value

    def __iadd__(self, other: Boxed) -> Boxed:
        self.data += other.data
        return self


def _allocate(shape: tuple[int, ...], element: dtype, device: Device) -> Boxed:
    return Boxed(np.empty(shape, dtype=element.numpy))


def test_a_user_array_type(dispatcher: Dispatcher) -> None:
    dispatcher.rename_backend("PrivateUse2", "boxed")
    register_backend(Boxed, "boxed", empty=_allocate, dispatcher=dispatcher)
    mul, sum_like = _define(dispatcher)
    x = Boxed([1.0, 2.0, 3.0])
    g = grad(lambda a: sum_like(mul(mul(a, a), a)), dispatcher=dispatcher)(x)
    assert isinstance(g, Boxed)
    np.testing.assert_allclose(g.data, 3 * x.data**2)
    _, vjp_fn = vjp(lambda a: mul(a, a), x, dispatcher=dispatcher)
    (ga,) = vjp_fn(Boxed([1.0, 1.0, 1.0]))
    np.testing.assert_allclose(ga.data, 2 * x.data)


def test_numpy_float32_keeps_its_dtype(dispatcher: Dispatcher) -> None:
    mul, sum_like = _define(dispatcher)
    x = np.array([1.0, 2.0], dtype=np.float32)
    g = grad(lambda a: sum_like(mul(a, a)), dispatcher=dispatcher)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * x)

"""customop.vmap on other backends: a user array type, and torch tensors without the adapter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import customop
from customop import Tensor, VmapFallbackWarning, custom_op
from customop.dispatch import Dispatcher
from customop.tensor import Device, dtype, register_backend


class Boxed:
    """A user array type: numpy data behind its own class, with only what vmap's moves use
    (indexing, ``reshape``, ``transpose``, ``sum``) and what the kernels below use."""

    def __init__(self, data: Any) -> None:
        self.data = np.asarray(data)

    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)

    def __getitem__(self, index: Any) -> Boxed:
        return Boxed(self.data[index])

    def __setitem__(self, index: Any, value: Any) -> None:
        self.data[index] = value.data if isinstance(value, Boxed) else value

    def reshape(self, shape: Any) -> Boxed:
        return Boxed(self.data.reshape(shape))

    def transpose(self, order: Any) -> Boxed:
        return Boxed(self.data.transpose(order))

    def sum(self, dim: int) -> Boxed:
        return Boxed(self.data.sum(dim))

    def __mul__(self, other: Any) -> Boxed:
        return Boxed(self.data * (other.data if isinstance(other, Boxed) else other))


def _allocate(shape: tuple[int, ...], element: dtype, device: Device) -> Boxed:
    return Boxed(np.empty(shape, dtype=element.numpy))


def test_a_user_array_type_with_a_rule_and_with_the_loop(dispatcher: Dispatcher) -> None:
    dispatcher.rename_backend("PrivateUse2", "boxed")
    register_backend(Boxed, "boxed", empty=_allocate, dispatcher=dispatcher)

    @custom_op("vb::triple", mutates_args=(), dispatcher=dispatcher)
    def triple(x: Tensor) -> Tensor:
        return x * 3.0

    @custom_op("vb::rowsum", mutates_args=(), dispatcher=dispatcher)
    def rowsum(x: Tensor) -> Tensor:
        return x.sum(-1)

    triple.register_vmap(lambda info, in_dims, x: (triple(x), in_dims[0]))
    data = np.arange(24.0).reshape(2, 3, 4)
    got = customop.vmap(triple, in_dims=2, out_dims=1, dispatcher=dispatcher)(Boxed(data))
    assert isinstance(got, Boxed)
    np.testing.assert_array_equal(got.data, np.moveaxis(data * 3, 2, 1))
    with pytest.warns(VmapFallbackWarning, match="vb::rowsum has no vmap rule"):
        summed = customop.vmap(rowsum, in_dims=1, dispatcher=dispatcher)(Boxed(data))
    assert isinstance(summed, Boxed)
    np.testing.assert_array_equal(summed.data, data.sum(-1).T)


def test_torch_tensors_without_the_torch_adapter(dispatcher: Dispatcher) -> None:
    torch = pytest.importorskip("torch")

    @custom_op("vb::softplus", mutates_args=(), dispatcher=dispatcher)
    def softplus(x: Tensor) -> Tensor:
        return torch.nn.functional.softplus(x)

    softplus.register_vmap(lambda info, in_dims, x: (softplus(x), in_dims[0]))
    x = torch.randn(3, 4, dtype=torch.float64)
    got = customop.vmap(softplus, in_dims=1, out_dims=1, dispatcher=dispatcher)(x)
    assert isinstance(got, torch.Tensor)
    torch.testing.assert_close(got, torch.nn.functional.softplus(x))
    # pointwise torch functions (and operators on torch tensors) are exact on batched values
    got = customop.vmap(
        lambda a: softplus(torch.sigmoid(a) * x[0] + torch.where(a > 0, a, 2 * a)),
        dispatcher=dispatcher,
    )(x)
    row = x[0]
    expected = torch.stack(
        [torch.nn.functional.softplus(torch.sigmoid(r) * row + torch.where(r > 0, r, 2 * r))
         for r in x]
    )  # fmt: skip
    torch.testing.assert_close(got, expected)
    with pytest.raises(customop.VmapError, match=r"vmap: torch.sum on a batched value"):
        customop.vmap(lambda a: torch.sum(a), dispatcher=dispatcher)(x)

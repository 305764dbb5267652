"""torch's compile test whose fake impl uses torch's API, ported, bridged.

From ``test/test_custom_ops.py`` (``TestCustomOpAPI.test_compile``, torch
2.13): under ``torch.compile`` the fake impl runs on torch's fakes through
``customop.torch.register``. unittest's assertions are pytest's; what they
assert is torch's. The ports on customop's own fakes are in
``tests/library/test_ported_torch_fakes.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import customop
import customop.torch

Tensor = torch.Tensor


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> None:
    torch._dynamo.reset()


# torch's kernel adds a torch tensor to a numpy array: numpy 2 warns about torch's __array_wrap__.
@pytest.mark.filterwarnings("ignore:__array_wrap__ must accept context:DeprecationWarning")
def test_compile(ns: str, track: list[Any]) -> None:
    called_impl = False
    called_abstract = False

    @customop.custom_op(f"{ns}::linear", mutates_args=())
    def custom_linear(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
        nonlocal called_impl
        called_impl = True
        x_np = x.numpy()
        w_np = weight.numpy()
        b_np = bias.numpy()  # noqa: F841 -- torch's test reads it and uses bias
        out_np = np.add(x_np @ w_np.T, bias)
        return out_np  # type: ignore[no-any-return]  # torch's test returns what np.add gives

    @custom_linear.register_fake
    def _(x: Any, weight: Any, bias: Any) -> Any:
        nonlocal called_abstract
        called_abstract = True
        if x.dim() != 2:
            raise AssertionError(f"expected x.dim() == 2, got {x.dim()}")
        if weight.dim() != 2:
            raise AssertionError(f"expected weight.dim() == 2, got {weight.dim()}")
        if bias.dim() != 1:
            raise AssertionError(f"expected bias.dim() == 1, got {bias.dim()}")
        if x.shape[1] != weight.shape[1]:
            raise AssertionError(
                f"expected x.shape[1] == weight.shape[1], got {x.shape[1]} vs {weight.shape[1]}"
            )
        if weight.shape[0] != bias.shape[0]:
            raise AssertionError(
                f"expected weight.shape[0] == bias.shape[0], got {weight.shape[0]} vs "
                f"{bias.shape[0]}"
            )
        if x.device != weight.device:
            raise AssertionError(
                f"expected x.device == weight.device, got {x.device} vs {weight.device}"
            )
        return x.new_empty(x.size(0), weight.size(0))

    track += [custom_linear, customop.torch.register(custom_linear)]
    x = torch.randn(2, 2)
    weight = torch.randn(2, 2)
    bias = torch.randn(2)
    out = torch.compile(custom_linear, backend="eager", fullgraph=True)(x, weight, bias)
    torch.testing.assert_close(out, torch.nn.functional.linear(x, weight, bias))
    assert called_impl
    assert called_abstract

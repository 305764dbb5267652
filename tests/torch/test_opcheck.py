"""torch.library.opcheck on customop ops registered in torch: the translation is faithful."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import customop
import customop.torch
from customop.dispatch import Dispatcher

ALL = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def _passes(op: Any, args: tuple[Any, ...]) -> None:
    report = torch.library.opcheck(op, args, test_utils=ALL)
    assert report == dict.fromkeys(ALL, "SUCCESS")


def test_plain_op(ns: str, dispatcher: Dispatcher, track: list[Any]) -> None:
    op = customop.custom_op(
        f"{ns}::scale",
        lambda x, s: x * s,
        mutates_args=(),
        schema="(Tensor x, float s) -> Tensor",
        dispatcher=dispatcher,
    )
    op.register_fake(lambda x, s: customop.empty_like(x))
    track += [op, customop.torch.register(op)]
    _passes(getattr(torch.ops, ns).scale.default, (torch.randn(3, 4), 2.0))


def test_mutating_op(ns: str, dispatcher: Dispatcher, track: list[Any]) -> None:
    def add_(x: Any, y: Any) -> None:
        x.add_(y)

    op = customop.custom_op(
        f"{ns}::add_",
        add_,
        mutates_args=("x",),
        schema="(Tensor(a0!) x, Tensor y) -> ()",
        dispatcher=dispatcher,
    )
    op.register_fake(lambda x, y: None)
    track += [op, customop.torch.register(op)]
    _passes(getattr(torch.ops, ns).add_.default, (torch.randn(3), torch.randn(3)))


def test_data_dependent_output_size(ns: str, dispatcher: Dispatcher, track: list[Any]) -> None:
    op = customop.custom_op(
        f"{ns}::positive",
        lambda x: x[x > 0],
        mutates_args=(),
        schema="(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )

    @op.register_fake
    def _(x: Any) -> Any:
        n = customop.get_ctx().new_dynamic_size()
        return customop.new_empty(x, (n,))

    track += [op, customop.torch.register(op)]
    _passes(getattr(torch.ops, ns).positive.default, (torch.randn(8),))


def test_op_with_autograd_formula(ns: str, dispatcher: Dispatcher, track: list[Any]) -> None:
    op = customop.custom_op(
        f"{ns}::mul",
        lambda x, y: x * y,
        mutates_args=(),
        schema="(Tensor x, Tensor y) -> Tensor",
        dispatcher=dispatcher,
    )
    op.register_fake(lambda x, y: customop.empty_like(x))

    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.save_for_backward(*inputs)

    def backward(ctx: Any, grad: Any) -> Any:
        x, y = ctx.saved_tensors
        return grad * y, grad * x

    op.register_autograd(backward, setup_context=setup_context)
    track += [op, customop.torch.register(op)]
    x, y = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    _passes(getattr(torch.ops, ns).mul.default, (x, y))


def test_wrong_fake_fails_faketensor_check(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    op = customop.custom_op(
        f"{ns}::double",
        lambda x: torch.cat([x, x]),
        mutates_args=(),
        schema="(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )
    op.register_fake(lambda x: customop.empty_like(x))  # wrong: the output is twice as long
    track += [op, customop.torch.register(op)]
    with pytest.raises(Exception, match="test_faketensor"):
        torch.library.opcheck(
            getattr(torch.ops, ns).double.default, (torch.randn(3),), test_utils="test_faketensor"
        )

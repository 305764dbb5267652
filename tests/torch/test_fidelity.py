"""Bridged ops behave as torch's own custom ops (issue #26 §1)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import customop
import customop.torch


def test_kernels_under_a_formula_run_below_autograd(ns: str, track: list[Any]) -> None:
    @customop.custom_op(f"{ns}::add", mutates_args=())
    def add(x: customop.Tensor, y: float) -> customop.Tensor:
        return torch.from_numpy(x.numpy() + y)  # numpy() refuses a grad input with grad on

    add.register_autograd(lambda ctx, grad: (grad, None))
    track += [add, customop.torch.register(ns)]
    x = torch.randn(3, requires_grad=True)
    for call in (add, getattr(customop.ops, ns).add, getattr(torch.ops, ns).add):
        out = call(x, 2.0)
        assert out.requires_grad
        assert torch.allclose(out, x.detach() + 2.0)


def test_data_dependent_op_compiles_without_fullgraph(ns: str, track: list[Any]) -> None:
    # Dynamo graph-breaks on the data-dependent size and then traces the trampoline,
    # which must not raise inside Dynamo (it asked torch.device('PrivateUse2')).
    @customop.custom_op(f"{ns}::nonzero", mutates_args=())
    def nonzero(x: customop.Tensor) -> customop.Tensor:
        return torch.nonzero(x)

    @nonzero.register_fake
    def _(x: Any) -> Any:
        n = customop.get_ctx().new_dynamic_size()
        return customop.new_empty(x, (n, x.dim()), dtype=customop.int64)

    track += [nonzero, customop.torch.register(nonzero)]
    torch._dynamo.reset()
    x = torch.tensor([0.0, 1.0, 2.0])
    compiled = torch.compile(lambda x: nonzero(x.clone()).clone(), backend="eager")
    assert torch.equal(compiled(x), torch.tensor([[1], [2]]))


def test_formula_on_a_view_op_reaches_torch(ns: str, track: list[Any]) -> None:
    @customop.custom_op(f"{ns}::first", mutates_args=(), schema="(Tensor(a) x, int n) -> Tensor(a)")
    def first(x: Any, n: int) -> Any:
        return x[:n]

    first.register_autograd(lambda ctx, grad: (grad * 5, None))
    track += [first, customop.torch.register(ns)]
    x = torch.ones(3, requires_grad=True)
    getattr(torch.ops, ns).first(x, 3).sum().backward()
    assert torch.equal(x.grad, torch.full((3,), 5.0))


@pytest.mark.parametrize("form", ["torch", "customop"], ids=str)
def test_keyword_only_arguments_reach_torch_formulas(ns: str, track: list[Any], form: str) -> None:
    @customop.custom_op(f"{ns}::scale", mutates_args=())
    def scale(x: customop.Tensor, *, by: float) -> customop.Tensor:
        return x * by

    if form == "torch":
        scale.register_autograd(
            lambda ctx, grad: grad * ctx.by,
            setup_context=lambda ctx, inputs, keyword_only_inputs, output: setattr(
                ctx, "by", keyword_only_inputs["by"]
            ),
        )
    else:
        scale.register_autograd(
            lambda ctx, grad: (grad * ctx.by, None),
            setup_context=lambda ctx, inputs, output: setattr(ctx, "by", inputs[1]),
        )
    track += [scale, customop.torch.register(ns)]
    x = torch.ones(2, requires_grad=True)
    scale(x, by=3.0).sum().backward()
    assert torch.equal(x.grad, torch.full((2,), 3.0))


def test_library_impl_takes_torch_op_objects(ns: str, track: list[Any]) -> None:
    lib = customop.Library(ns, "FRAGMENT")
    track.append(lib)
    lib.define("inc(Tensor x) -> Tensor")
    track.append(customop.torch.register(ns))
    for target, value in (
        (getattr(torch.ops, ns).inc.default, 1.0),
        (getattr(torch.ops, ns).inc, 2.0),
    ):
        handle = lib.impl(target, lambda x, value=value: x + value, "CPU")
        assert torch.equal(getattr(torch.ops, ns).inc(torch.zeros(1)), torch.full((1,), value))
        handle.remove()

"""Batching rules through torch: torch.func.vmap, per-example gradients, compile, opcheck.

The op's kernel is numpy code (torch's vmap wrappers have no storage, so it
can only run through its rule or torch's own loop); its reference is plain
torch code, which torch.func batches natively.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import customop
import customop.torch
from customop import VmapError
from customop.dispatch import Dispatcher
from customop.vmap import rule_of


def _softplus_np(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.logaddexp(0.0, x.detach().numpy()))


def _reference(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.softplus(x)


def _rule(info: Any, in_dims: Any, x: Any) -> Any:
    return _RULE_OP[0](x), in_dims[0]


_RULE_OP: list[Any] = []


def _softplus(ns: str, dispatcher: Dispatcher, track: list[Any], *, rule: bool = True) -> Any:
    @customop.custom_op(f"{ns}::softplus", mutates_args=(), dispatcher=dispatcher)
    def softplus(x: torch.Tensor) -> torch.Tensor:
        return _softplus_np(x)

    softplus.register_fake(lambda x: torch.empty_like(x))
    softplus.register_autograd(
        lambda ctx, g: g * torch.sigmoid(ctx.x),
        setup_context=lambda ctx, inputs, output: setattr(ctx, "x", inputs[0]),
    )
    _RULE_OP[:] = [softplus]
    if rule:
        softplus.register_vmap(_rule)
    track += [softplus, customop.torch.register(softplus)]
    return softplus


def _torch_op(ns: str) -> Any:
    return getattr(torch.ops, ns).softplus.default


@pytest.mark.parametrize("spelling", ["customop", "torch.ops"])
@pytest.mark.parametrize("dims", [(0, 0), (1, 0), (-1, 1)], ids=str)
def test_torch_vmap_runs_the_rule(
    ns: str, dispatcher: Dispatcher, track: list[Any], spelling: str, dims: tuple[int, int]
) -> None:
    in_dims, out_dims = dims
    softplus = _softplus(ns, dispatcher, track)
    op = softplus if spelling == "customop" else _torch_op(ns)
    x = torch.randn(3, 4, 5, dtype=torch.float64)
    got = torch.func.vmap(op, in_dims=in_dims, out_dims=out_dims)(x)
    torch.testing.assert_close(got, torch.func.vmap(_reference, in_dims, out_dims)(x))


def _total(ns: str, dispatcher: Dispatcher, track: list[Any]) -> Any:
    @customop.custom_op(f"{ns}::total", mutates_args=(), dispatcher=dispatcher)
    def total(x: torch.Tensor) -> torch.Tensor:
        return x.sum()

    total.register_fake(lambda x: x.new_empty(()))
    total.register_autograd(
        lambda ctx, g: torch.ones(ctx.shape, dtype=g.dtype) * g,
        setup_context=lambda ctx, inputs, output: setattr(ctx, "shape", inputs[0].shape),
    )
    total.register_vmap(lambda info, in_dims, x: (x.movedim(in_dims[0], 0).flatten(1).sum(1), 0))
    track += [total, customop.torch.register(total)]
    return total


def _mul(ns: str, dispatcher: Dispatcher, track: list[Any]) -> Any:
    @customop.custom_op(f"{ns}::mul", mutates_args=(), dispatcher=dispatcher)
    def mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    mul.register_fake(lambda x, y: torch.empty_like(x))
    mul.register_autograd(
        lambda ctx, g: (g * ctx.y, g * ctx.x),
        setup_context=lambda ctx, inputs, output: (
            setattr(ctx, "x", inputs[0]),
            setattr(ctx, "y", inputs[1]),
        ),
    )

    def rule(info: Any, in_dims: Any, x: Any, y: Any) -> Any:
        def front(t: Any, dim: Any) -> Any:
            return t if dim is None else t.movedim(dim, 0)

        return mul(front(x, in_dims[0]), front(y, in_dims[1])), 0

    mul.register_vmap(rule)
    track += [mul, customop.torch.register(mul)]
    return mul


def test_per_example_gradients_equal_torchs(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    """customop.vmap(customop.autograd.grad(loss)) on torch tensors, against torch.func's
    per-example gradients of the same loss written in plain torch."""
    softplus, total = _softplus(ns, dispatcher, track), _total(ns, dispatcher, track)
    mul = _mul(ns, dispatcher, track)
    w = torch.randn(4, dtype=torch.float64)
    xs = torch.randn(8, 4, dtype=torch.float64)
    loss = lambda weight, x: total(softplus(mul(x, weight)))  # noqa: E731
    per_example = customop.autograd.grad(loss, dispatcher=dispatcher)
    ours = customop.vmap(per_example, in_dims=(None, 0), dispatcher=dispatcher)(w, xs)
    reference = lambda weight, x: _reference(x * weight).sum()  # noqa: E731
    theirs = torch.func.vmap(torch.func.grad(reference), in_dims=(None, 0))(w, xs)
    assert isinstance(ours, torch.Tensor) and ours.shape == (8, 4)
    torch.testing.assert_close(ours, theirs)


def test_torch_func_grad_fails_as_for_torchs_own_custom_op(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    """torch 2.13 runs no torch.func.grad through an op whose formula came from
    register_autograd (pytorch#168393): the bridged op fails exactly as torch's own does."""
    softplus = _softplus(ns, dispatcher, track)

    @torch.library.custom_op(f"{ns}::torch_softplus", mutates_args=())
    def torch_softplus(x: torch.Tensor) -> torch.Tensor:
        return _reference(x)

    torch_softplus.register_fake(lambda x: torch.empty_like(x))
    torch_softplus.register_autograd(
        lambda ctx, g: g * torch.sigmoid(ctx.x),
        setup_context=lambda ctx, inputs, output: setattr(ctx, "x", inputs[0]),
    )
    x = torch.randn(3, 4, dtype=torch.float64)
    errors = []
    for op in (softplus, torch_softplus):
        with pytest.raises(RuntimeError) as raised:
            torch.func.vmap(torch.func.grad(lambda a, op=op: op(a).sum()))(x)
        errors.append(str(raised.value))
    assert errors[0] == errors[1]
    assert "must override the setup_context staticmethod" in errors[0]


def test_torch_autograd_through_torch_vmap(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    softplus = _softplus(ns, dispatcher, track)
    x = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(torch.func.vmap(softplus, in_dims=1)(x).sum(), x)
    torch.testing.assert_close(grad, torch.sigmoid(x))


def test_opcheck_still_passes_with_the_rule(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    _softplus(ns, dispatcher, track)
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    torch.library.opcheck(_torch_op(ns), (x,))


def test_torch_compile_of_a_vmapped_function(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    softplus = _softplus(ns, dispatcher, track)
    x = torch.randn(4, 6, dtype=torch.float64)
    compiled = torch.compile(
        torch.func.vmap(lambda a: softplus(a) * 2), backend="aot_eager", fullgraph=True
    )
    torch.testing.assert_close(compiled(x), _reference(x) * 2)


def test_rules_registered_and_removed_later_reach_torch(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    softplus = _softplus(ns, dispatcher, track, rule=False)
    calls: list[Any] = []

    def counted(info: Any, in_dims: Any, x: Any) -> Any:
        calls.append((info.batch_size, in_dims))
        return softplus(x), in_dims[0]

    x = torch.randn(3, 4, dtype=torch.float64)
    # No rule: torch's own loop; the kernel still never sees a vmap wrapper.
    torch.testing.assert_close(torch.func.vmap(softplus)(x), _reference(x))
    softplus.register_vmap(counted)
    torch.testing.assert_close(torch.func.vmap(softplus, in_dims=1)(x), _reference(x).T)
    assert calls == [(4, (1,))]
    customop.handle_of(counted).remove()
    assert rule_of(softplus) is None
    torch.testing.assert_close(torch.func.vmap(softplus)(x), _reference(x))
    assert len(calls) == 1


def test_a_wrong_rule_is_named_through_torch_too(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    softplus = _softplus(ns, dispatcher, track, rule=False)
    softplus.register_vmap(lambda info, in_dims, x: softplus(x))
    with pytest.raises(VmapError, match=rf"vmap: the rule of {ns}::softplus .* not a pair"):
        torch.func.vmap(softplus)(torch.randn(3, 4, dtype=torch.float64))


def test_a_random_op_under_randomness_error(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    @customop.custom_op(
        f"{ns}::noise", mutates_args=(), dispatcher=dispatcher, tags="nondeterministic_seeded"
    )
    def noise(x: torch.Tensor) -> torch.Tensor:
        return torch.randn_like(x)

    noise.register_fake(lambda x: torch.empty_like(x))
    noise.register_vmap(lambda info, in_dims, x: (noise(x), in_dims[0]))
    track += [noise, customop.torch.register(noise)]
    x = torch.zeros(3, 4)
    with pytest.raises(RuntimeError, match=rf"vmap: {ns}::noise is a random op"):
        torch.func.vmap(noise)(x)
    rows = torch.func.vmap(noise, randomness="different")(x)
    assert len({tuple(row.tolist()) for row in rows}) == 3


def test_customop_vmap_through_a_torch_registered_op(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    softplus = _softplus(ns, dispatcher, track)
    x = torch.randn(3, 4, dtype=torch.float64)
    got = customop.vmap(softplus, in_dims=1, dispatcher=dispatcher)(x)
    torch.testing.assert_close(got, _reference(x).T)

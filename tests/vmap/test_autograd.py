"""vmap and customop.autograd nested both ways, with the wrappers grad hands its function.

A ``grad`` outside a ``vmap`` tracks the physical arrays inside the batched
values (its wrappers sit in them); a ``grad`` inside one tracks the batched
values themselves (its wrappers wrap them). These tests nest them every way
customop supports, to second order, with unbatched and closed-over
differentiated values, with rules and with the loop fallback, and check each
gradient exactly against the closed form; plain array code on a tracked value
is refused, never a silent zero.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import customop
from customop import AutogradError, VmapError, custom_op
from customop.autograd import grad, value_and_grad
from customop.dispatch import Dispatcher
from customop.vmap import rule_of
from tests.vmap.ops import define

X = np.random.default_rng(0).standard_normal((3, 4))
W = np.random.default_rng(1).standard_normal(4)


def _front(ops: SimpleNamespace, x: Any, dim: int | None) -> Any:
    return x if dim in (None, 0) else ops.moveaxis(x, dim, 0)


def _define(d: Dispatcher) -> SimpleNamespace:
    """Ops whose formulas are made of ops (so they differentiate twice) and whose rules
    call ops (so a grad around the vmap follows them)."""
    o = define(d)

    def keep(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.inputs = inputs

    @custom_op("vw::sin", mutates_args=(), dispatcher=d)
    def sin(x: np.ndarray) -> np.ndarray:
        return np.asarray(np.sin(x))

    @custom_op("vw::cos", mutates_args=(), dispatcher=d)
    def cos(x: np.ndarray) -> np.ndarray:
        return np.asarray(np.cos(x))

    @custom_op("vw::neg", mutates_args=(), dispatcher=d)
    def neg(x: np.ndarray) -> np.ndarray:
        return np.asarray(-x)

    @custom_op("vw::mul", mutates_args=(), dispatcher=d)
    def mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(a * b)

    for op in (sin, cos, neg):
        op.register_fake(lambda x: customop.empty_like(x))
        op.register_vmap(lambda info, in_dims, x, op=op: (op(x), in_dims[0]))
    mul.register_fake(lambda a, b: customop.empty_like(a if a.ndim >= b.ndim else b))
    sin.register_autograd(lambda ctx, g: mul(g, cos(ctx.inputs[0])), setup_context=keep)
    cos.register_autograd(lambda ctx, g: mul(g, neg(sin(ctx.inputs[0]))), setup_context=keep)
    neg.register_autograd(lambda ctx, g: neg(g))

    def mul_backward(ctx: Any, g: Any) -> Any:
        a, b = ctx.inputs
        return o.sum_to(mul(g, b), list(a.shape)), o.sum_to(mul(g, a), list(b.shape))

    mul.register_autograd(mul_backward, setup_context=keep)
    # An unbatched operand has an example's shape: broadcasting aligns it with each example.
    mul.register_vmap(
        lambda info, in_dims, a, b: (mul(_front(o, a, in_dims[0]), _front(o, b, in_dims[1])), 0)
    )

    @custom_op("vw::expand_as", mutates_args=(), dispatcher=d)
    def expand_as(g: np.ndarray, x: np.ndarray) -> np.ndarray:
        return np.broadcast_to(g.reshape(g.shape + (1,) * (x.ndim - g.ndim)), x.shape).copy()

    @custom_op("vw::total", mutates_args=(), dispatcher=d)
    def total(x: np.ndarray) -> np.ndarray:
        return np.asarray(x.sum())

    expand_as.register_fake(lambda g, x: customop.empty_like(x))
    total.register_fake(lambda x: customop.new_empty(x, ()))
    total.register_autograd(lambda ctx, g: expand_as(g, ctx.inputs[0]), setup_context=keep)

    def expand_as_backward(ctx: Any, out: Any) -> Any:
        shape = list(ctx.inputs[0].shape)
        flat = o.reshape(out, [math.prod(shape), math.prod(out.shape) // math.prod(shape)])
        return o.reshape(o.sum_dim(flat, 1), shape), None

    expand_as.register_autograd(expand_as_backward, setup_context=keep)

    @expand_as.register_vmap
    def _(info: Any, in_dims: Any, g: Any, x: Any) -> Any:
        if in_dims[1] is None:
            raise NotImplementedError("vw::expand_as: an unbatched x is not needed here")
        return expand_as(_front(o, g, in_dims[0]), _front(o, x, in_dims[1])), 0

    @total.register_vmap
    def _(info: Any, in_dims: Any, x: Any) -> Any:
        size = info.batch_size
        return o.sum_dim(
            o.reshape(_front(o, x, in_dims[0]), [size, math.prod(x.shape) // size]), 1
        ), 0

    return SimpleNamespace(
        sin=sin, cos=cos, neg=neg, mul=mul, total=total, expand_as=expand_as, base=o
    )


@pytest.fixture(params=["rules", "loop"])
def ops(request: pytest.FixtureRequest, dispatcher: Dispatcher) -> Iterator[SimpleNamespace]:
    """The ops, with their rules or (``loop``) with sin's and mul's removed."""
    found = _define(dispatcher)
    if request.param == "rules":
        yield found
        return
    for op in (found.sin, found.mul):
        rule = rule_of(op)
        assert rule is not None
        customop.handle_of(rule.fn).remove()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=customop.VmapFallbackWarning)
        yield found


def _vmap(d: Dispatcher, fn: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    return customop.vmap(fn, dispatcher=d, **kwargs)


def _grad(d: Dispatcher, fn: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    return grad(fn, dispatcher=d, **kwargs)


# -- second order, every nesting -------------------------------------------------------


def test_grad_of_vmap_of_grad(dispatcher: Dispatcher, ops: SimpleNamespace) -> None:
    per_example = _grad(dispatcher, lambda a: ops.total(ops.sin(a)))  # cos(x)
    outer = _grad(dispatcher, lambda a: ops.total(_vmap(dispatcher, per_example)(a)))
    np.testing.assert_allclose(outer(X), -np.sin(X), rtol=1e-12)


def test_grad_of_vmap_of_grad_in_chunks(dispatcher: Dispatcher, ops: SimpleNamespace) -> None:
    per_example = _grad(dispatcher, lambda a: ops.total(ops.sin(a)))
    chunked = _vmap(dispatcher, per_example, chunk_size=2)
    outer = _grad(dispatcher, lambda a: ops.total(chunked(a)))
    np.testing.assert_allclose(outer(X), -np.sin(X), rtol=1e-12)


def test_vmap_of_grad_of_grad(dispatcher: Dispatcher, ops: SimpleNamespace) -> None:
    xs = X[:, 0].copy()
    second = _grad(dispatcher, _grad(dispatcher, ops.sin))
    np.testing.assert_allclose(_vmap(dispatcher, second)(xs), -np.sin(xs), rtol=1e-12)


def test_grad_of_grad_of_vmap(dispatcher: Dispatcher, ops: SimpleNamespace) -> None:
    first = _grad(dispatcher, lambda a: ops.total(_vmap(dispatcher, ops.sin)(a)))
    second = _grad(dispatcher, lambda b: ops.total(first(b)))
    np.testing.assert_allclose(second(X), -np.sin(X), rtol=1e-12)


# -- differentiated values that are not batched ---------------------------------------


def test_vmap_of_grad_by_an_unbatched_argument(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    # d/dw sum_j sin(x_j) w_j = sin(x), per example; w is the same for every example.
    per_example = _grad(dispatcher, lambda a, w: ops.total(ops.mul(ops.sin(a), w)), argnums=1)
    got = _vmap(dispatcher, per_example, in_dims=(0, None))(X, W)
    np.testing.assert_allclose(got, np.sin(X), rtol=1e-12)


def test_grad_by_a_value_closed_over_in_a_vmap_of_grad(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    def outer(w: Any) -> Any:
        # The inner grad's wrappers come off for the batched computation; the outer
        # grad's w stays on, so it is followed through the rule (or the loop).
        per_example = _grad(dispatcher, lambda a: ops.total(ops.mul(ops.sin(a), w)))
        return ops.total(_vmap(dispatcher, per_example)(X))  # sum_ij cos(x_ij) w_j

    np.testing.assert_allclose(_grad(dispatcher, outer)(W), np.cos(X).sum(0), rtol=1e-12)


def test_a_value_both_grads_differentiate(dispatcher: Dispatcher, ops: SimpleNamespace) -> None:
    def outer(w: Any) -> Any:
        both = _grad(dispatcher, lambda a, v: ops.total(ops.mul(ops.sin(a), v)), argnums=(0, 1))
        by_a, by_w = _vmap(dispatcher, both, in_dims=(0, None))(X, w)  # cos(x) w, sin(x)
        return ops.total(ops.mul(by_a, by_w))  # sum_ij sin(x_ij) cos(x_ij) w_j

    expected = (np.sin(X) * np.cos(X)).sum(0)
    np.testing.assert_allclose(_grad(dispatcher, outer)(W), expected, rtol=1e-12)


def test_the_value_of_value_and_grad_leaves_the_vmap(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    def value(a: Any) -> Any:  # a wrapper of the inner transform, which has ended
        loss, _ = value_and_grad(lambda r: ops.total(ops.sin(r)), dispatcher=dispatcher)(a)
        return loss

    np.testing.assert_allclose(_vmap(dispatcher, value)(X), np.sin(X).sum(1), rtol=1e-12)
    outer = _grad(dispatcher, lambda a: ops.total(_vmap(dispatcher, value)(a)))
    np.testing.assert_allclose(outer(X), np.cos(X), rtol=1e-12)


# -- what is refused -----------------------------------------------------------------------


def test_plain_arithmetic_on_a_tracked_batched_value_is_refused(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    """Exact under vmap alone; inside or around a grad, ``*`` is not recorded, so the
    gradient through it would be lost: refused where the result meets an op."""
    doubled = _vmap(dispatcher, lambda r: ops.sin(r * 2))
    np.testing.assert_allclose(doubled(X), np.sin(X * 2), rtol=1e-12)
    message = r"grad: 'vw::sin': its input 'x' was made from a value grad tracks by the \* op"
    with pytest.raises(AutogradError, match=message):
        _grad(dispatcher, lambda a: ops.total(doubled(a)))(X)
    with pytest.raises(AutogradError, match=message):
        _vmap(dispatcher, _grad(dispatcher, lambda r: ops.total(ops.sin(r * 2))))(X)


def test_a_rule_output_made_by_an_op_of_no_tracked_input_is_followed(
    dispatcher: Dispatcher,
) -> None:
    """A rule may return an op's result that depends on no tracked value (a constant):
    the grad around the vmap saw it made, so its zero gradient is exact."""
    o = _define(dispatcher)

    @custom_op("vw::zeros", mutates_args=(), dispatcher=dispatcher)
    def zeros(shape: list[int]) -> np.ndarray:
        return np.zeros(shape)

    @custom_op("vw::zeros_as", mutates_args=(), dispatcher=dispatcher)
    def zeros_as(x: np.ndarray) -> np.ndarray:
        return np.zeros(x.shape)

    zeros_as.register_fake(lambda x: customop.empty_like(x))
    zeros_as.register_autograd(lambda ctx, g: None)

    @zeros_as.register_vmap
    def _(info: Any, in_dims: Any, x: Any) -> Any:
        example = [size for i, size in enumerate(x.shape) if i != in_dims[0]]
        return zeros([info.batch_size, *example]), 0

    loss = lambda a: o.total(o.mul(o.sin(a), _vmap(dispatcher, zeros_as)(a)))  # noqa: E731
    np.testing.assert_array_equal(_grad(dispatcher, loss)(X), np.zeros_like(X))


def test_a_rule_computing_with_plain_code_under_grad_names_the_rule(
    dispatcher: Dispatcher,
) -> None:
    o = _define(dispatcher)

    @custom_op("vw::double", mutates_args=(), dispatcher=dispatcher)
    def double(x: np.ndarray) -> np.ndarray:
        return np.asarray(x * 2)

    double.register_autograd(lambda ctx, g: g * 2)
    double.register_vmap(lambda info, in_dims, x: (x * 2, in_dims[0]))
    with pytest.raises(VmapError, match=r"the rule of vw::double .* computed an output from"):
        _grad(dispatcher, lambda a: o.total(_vmap(dispatcher, double)(a)))(X)


def test_a_trace_records_the_nested_transforms(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    per_example = _grad(dispatcher, lambda a: ops.total(ops.sin(a)))
    second = _grad(dispatcher, lambda a: ops.total(_vmap(dispatcher, per_example)(a)))
    for fn, expected in [(_vmap(dispatcher, per_example), np.cos(X)), (second, -np.sin(X))]:
        graph = customop.trace(fn, X, dispatcher=dispatcher)
        np.testing.assert_allclose(graph(X), expected, rtol=1e-12)

"""Real ops with real formulas, written with customop ops, defined on a given dispatcher.

Each forward is a numpy kernel with a fake impl; each backward calls ops only
(never numpy directly), so it runs on any backend, under ``trace`` and, where
its ops have formulas too, under a nested ``grad``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from customop import custom_op, empty_like, new_empty
from customop.dispatch import Dispatcher

Array = np.ndarray


def _scalar(value: Any) -> Array:
    return np.asarray(value)  # a 0-d array, not a numpy scalar: ops take arrays


def define(dispatcher: Dispatcher, ns: str = "nn") -> SimpleNamespace:  # noqa: PLR0915 - one op after another
    """Define the ops in namespace ``ns`` and return them by name."""

    def op(name: str, **options: Any) -> Any:
        return custom_op(f"{ns}::{name}", mutates_args=(), dispatcher=dispatcher, **options)

    # -- elementwise ------------------------------------------------------------------
    @op("add")
    def add(a: Array, b: Array) -> Array:
        return np.add(a, b)

    @op("sub")
    def sub(a: Array, b: Array) -> Array:
        return np.subtract(a, b)

    @op("mul")
    def mul(a: Array, b: Array) -> Array:
        return np.multiply(a, b)

    @op("scale")
    def scale(x: Array, k: int) -> Array:
        return np.multiply(x, k)

    @op("exp")
    def exp(x: Array) -> Array:
        return np.exp(x)

    @op("tanh")
    def tanh(x: Array) -> Array:
        return np.tanh(x)

    @op("tanh_backward")
    def tanh_backward(grad: Array, y: Array) -> Array:
        return grad * (1 - y * y)

    for binary in (add, sub, mul):
        binary.register_fake(lambda a, b: empty_like(a))
    for unary in (exp, tanh):
        unary.register_fake(lambda x: empty_like(x))
    tanh_backward.register_fake(lambda grad, y: empty_like(y))
    scale.register_fake(lambda x, k: empty_like(x))

    add.register_autograd(lambda ctx, g: (g, g))
    sub.register_autograd(lambda ctx, g: (g, scale(g, -1)))

    def mul_setup(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.save_for_backward(*inputs)

    def mul_backward(ctx: Any, g: Array) -> tuple[Any, Any]:
        a, b = ctx.saved_tensors
        return (
            mul(g, b) if ctx.needs_input_grad[0] else None,
            mul(g, a) if ctx.needs_input_grad[1] else None,
        )

    mul.register_autograd(mul_backward, setup_context=mul_setup)
    scale.register_autograd(
        lambda ctx, g: (scale(g, ctx.k), None),
        setup_context=lambda ctx, inputs, output: setattr(ctx, "k", inputs[1]),
    )

    def exp_setup(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.save_for_backward(output)

    exp.register_autograd(lambda ctx, g: mul(g, ctx.saved_tensors[0]), setup_context=exp_setup)
    tanh.register_autograd(
        lambda ctx, g: tanh_backward(g, ctx.saved_tensors[0]), setup_context=exp_setup
    )

    # -- reductions and broadcasting --------------------------------------------------------
    @op("sum")
    def total(x: Array) -> Array:
        return _scalar(np.sum(x))

    @op("expand_as")
    def expand_as(g: Array, x: Array) -> Array:
        return np.broadcast_to(g, x.shape).copy()

    @op("sum_dim")
    def sum_dim(x: Array, dim: int) -> Array:
        return np.sum(x, axis=dim)

    @op("unsqueeze_expand")
    def unsqueeze_expand(g: Array, x: Array, dim: int) -> Array:
        return np.broadcast_to(np.expand_dims(g, dim), x.shape).copy()

    total.register_fake(lambda x: new_empty(x, ()))
    expand_as.register_fake(lambda g, x: empty_like(x))
    sum_dim.register_fake(
        lambda x, dim: new_empty(x, tuple(s for i, s in enumerate(x.shape) if i != dim % x.ndim))
    )
    unsqueeze_expand.register_fake(lambda g, x, dim: empty_like(x))

    def keep_x(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.x = inputs[0]

    total.register_autograd(lambda ctx, g: expand_as(g, ctx.x), setup_context=keep_x)
    expand_as.register_autograd(lambda ctx, g: (total(g), None))

    def sum_dim_setup(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.x, ctx.dim = inputs

    sum_dim.register_autograd(
        lambda ctx, g: (unsqueeze_expand(g, ctx.x, ctx.dim), None), setup_context=sum_dim_setup
    )
    unsqueeze_expand.register_autograd(
        lambda ctx, g: (sum_dim(g, ctx.dim), None, None),
        setup_context=lambda ctx, inputs, output: setattr(ctx, "dim", inputs[2]),
    )

    # -- linear algebra -----------------------------------------------------------------------
    @op("matmul")
    def matmul(a: Array, b: Array) -> Array:
        return np.matmul(a, b)

    @op("transpose")
    def transpose(x: Array) -> Array:
        return np.swapaxes(x, -1, -2).copy()

    matmul.register_fake(lambda a, b: new_empty(a, (*a.shape[:-1], b.shape[-1])))
    transpose.register_fake(lambda x: new_empty(x, (*x.shape[:-2], x.shape[-1], x.shape[-2])))

    def matmul_backward(ctx: Any, g: Array) -> tuple[Any, Any]:
        a, b = ctx.saved_tensors
        return matmul(g, transpose(b)), matmul(transpose(a), g)

    matmul.register_autograd(matmul_backward, setup_context=mul_setup)
    transpose.register_autograd(lambda ctx, g: transpose(g))

    # -- softmax (integer argument), layer norm (float argument, three tensor inputs) ---------
    @op("softmax")
    def softmax(x: Array, dim: int) -> Array:
        shifted = np.exp(x - np.max(x, axis=dim, keepdims=True))
        return shifted / np.sum(shifted, axis=dim, keepdims=True)

    @op("softmax_backward")
    def softmax_backward(g: Array, y: Array, dim: int) -> Array:
        return y * (g - np.sum(g * y, axis=dim, keepdims=True))

    softmax.register_fake(lambda x, dim: empty_like(x))
    softmax_backward.register_fake(lambda g, y, dim: empty_like(g))

    def softmax_setup(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.save_for_backward(output)
        ctx.dim = inputs[1]

    softmax.register_autograd(
        lambda ctx, g: (softmax_backward(g, ctx.saved_tensors[0], ctx.dim), None),
        setup_context=softmax_setup,
    )

    @op("layer_norm")
    def layer_norm(x: Array, weight: Array, bias: Array, eps: float = 1e-5) -> Array:
        mean = x.mean(-1, keepdims=True)
        rstd = 1 / np.sqrt(x.var(-1, keepdims=True) + eps)
        return (x - mean) * rstd * weight + bias

    @op("layer_norm_backward")
    def layer_norm_backward(
        g: Array, x: Array, weight: Array, eps: float
    ) -> tuple[Array, Array, Array]:
        n = x.shape[-1]
        mean = x.mean(-1, keepdims=True)
        rstd = 1 / np.sqrt(x.var(-1, keepdims=True) + eps)
        xhat = (x - mean) * rstd
        gx = g * weight
        dx = (
            rstd
            / n
            * (n * gx - gx.sum(-1, keepdims=True) - xhat * (gx * xhat).sum(-1, keepdims=True))
        )
        rows = tuple(range(g.ndim - 1))
        return dx, (g * xhat).sum(rows), g.sum(rows)

    layer_norm.register_fake(lambda x, weight, bias, eps=1e-5: empty_like(x))
    layer_norm_backward.register_fake(
        lambda g, x, weight, eps: (empty_like(x), empty_like(weight), empty_like(weight))
    )

    def layer_norm_setup(ctx: Any, inputs: Any, output: Any) -> None:
        x, weight, _, ctx.eps = inputs
        ctx.save_for_backward(x, weight)

    def layer_norm_grads(ctx: Any, g: Array) -> tuple[Any, Any, Any, None]:
        x, weight = ctx.saved_tensors
        dx, dw, db = layer_norm_backward(g, x, weight, ctx.eps)
        return dx, dw, db, None

    layer_norm.register_autograd(layer_norm_grads, setup_context=layer_norm_setup)

    # -- flash-attention-shaped pair: forward returns (out, softmax_lse) ----------------------
    @op("flash_attn_forward")
    def flash_attn_forward(
        q: Array, k: Array, v: Array, softmax_scale: float
    ) -> tuple[Array, Array]:
        s = np.matmul(q, np.swapaxes(k, -1, -2)) * softmax_scale
        m = s.max(-1, keepdims=True)
        lse = m + np.log(np.exp(s - m).sum(-1, keepdims=True))
        return np.matmul(np.exp(s - lse), v), lse[..., 0]

    @op("flash_attn_backward")
    def flash_attn_backward(  # noqa: PLR0917 -- flash-attn's own positional signature
        dout: Array, dlse: Array, q: Array, k: Array, v: Array, out: Array, lse: Array,
        softmax_scale: float,
    ) -> tuple[Array, Array, Array]:  # fmt: skip
        p = np.exp(np.matmul(q, np.swapaxes(k, -1, -2)) * softmax_scale - lse[..., None])
        dv = np.matmul(np.swapaxes(p, -1, -2), dout)
        dp = np.matmul(dout, np.swapaxes(v, -1, -2))
        delta = (dout * out).sum(-1, keepdims=True)
        ds = p * (dp - delta + dlse[..., None]) * softmax_scale
        return np.matmul(ds, k), np.matmul(np.swapaxes(ds, -1, -2), q), dv

    flash_attn_forward.register_fake(
        lambda q, k, v, softmax_scale: (
            new_empty(q, (*q.shape[:-1], v.shape[-1])),
            new_empty(q, q.shape[:-1]),
        )
    )
    flash_attn_backward.register_fake(
        lambda dout, dlse, q, k, v, out, lse, softmax_scale: (
            empty_like(q), empty_like(k), empty_like(v),
        )
    )  # fmt: skip

    def attn_setup(ctx: Any, inputs: Any, output: Any) -> None:
        q, k, v, ctx.softmax_scale = inputs
        ctx.save_for_backward(q, k, v, *output)

    def attn_backward(ctx: Any, dout: Array, dlse: Array) -> tuple[Any, Any, Any, None]:
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = flash_attn_backward(dout, dlse, q, k, v, out, lse, ctx.softmax_scale)
        return dq, dk, dv, None

    flash_attn_forward.register_autograd(attn_backward, setup_context=attn_setup)

    # -- a loss with an integer input, and an op with two outputs ---------------------------
    @op("nll")
    def nll(logp: Array, labels: Array) -> Array:
        return _scalar(-logp[np.arange(len(labels)), labels].mean())

    @op("nll_backward")
    def nll_backward(g: Array, logp: Array, labels: Array) -> Array:
        grad = np.zeros_like(logp)
        grad[np.arange(len(labels)), labels] = -g / len(labels)
        return grad

    nll.register_fake(lambda logp, labels: new_empty(logp, ()))
    nll_backward.register_fake(lambda g, logp, labels: empty_like(logp))
    nll.register_autograd(
        lambda ctx, g: (nll_backward(g, *ctx.saved_tensors), None),
        setup_context=lambda ctx, inputs, output: ctx.save_for_backward(*inputs),
    )

    @op("sincos")
    def sincos(x: Array) -> tuple[Array, Array]:
        return np.sin(x), np.cos(x)

    @op("sincos_backward")
    def sincos_backward(gs: Array, gc: Array, x: Array) -> Array:
        return gs * np.cos(x) - gc * np.sin(x)

    sincos.register_fake(lambda x: (empty_like(x), empty_like(x)))
    sincos_backward.register_fake(lambda gs, gc, x: empty_like(x))
    sincos.register_autograd(
        lambda ctx, gs, gc: sincos_backward(gs, gc, ctx.x), setup_context=keep_x
    )

    # -- a deliberately wrong formula: d(x*x)/dx is 2x, not x ------------------------------------
    @op("square_wrong")
    def square_wrong(x: Array) -> Array:
        return x * x

    square_wrong.register_fake(lambda x: empty_like(x))
    square_wrong.register_autograd(lambda ctx, g: mul(g, ctx.x), setup_context=keep_x)

    return SimpleNamespace(
        **{name: value for name, value in locals().items() if hasattr(value, "register_autograd")}
    )

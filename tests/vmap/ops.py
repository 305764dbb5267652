"""Ops with batching rules and formulas, for the vmap tests (numpy kernels).

Each rule calls only ops (no plain array code on the batched arrays), as
torch rules call torch ops, so a ``grad`` around the vmap follows them; the
formulas use ops and elementwise arithmetic, so they batch too
(``vmap(grad(f))``). `define` makes them in one dispatcher.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np

import customop
from customop import custom_op
from customop.dispatch import Dispatcher

#: The random generator the ``noise_like`` kernel draws from (reseeded per test).
RNG = {"rng": np.random.default_rng(0)}


def _save(*names: str) -> Any:
    def setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        for name, value in zip(names, inputs, strict=False):
            setattr(ctx, name, value)
        ctx.output = output

    return setup


def _keepdim(g: Any, dim: int) -> Any:
    """``g`` with a size-1 dimension at ``dim`` (basic indexing: exact on batched values)."""
    return g[(slice(None),) * dim + (None, Ellipsis)]


def define(d: Dispatcher) -> SimpleNamespace:  # noqa: PLR0915 -- one op after another
    """Define the test ops in ``d``; their handles in a namespace."""

    # -- helpers the rules and formulas are written with ----------------------------

    @custom_op("vt::moveaxis", mutates_args=(), dispatcher=d)
    def moveaxis(x: np.ndarray, source: int, destination: int) -> np.ndarray:
        return np.ascontiguousarray(np.moveaxis(x, source, destination))

    @moveaxis.register_fake
    def _(x: Any, source: int, destination: int) -> Any:
        order = [i for i in range(len(x.shape)) if i != source % len(x.shape)]
        order.insert(destination % len(x.shape), source % len(x.shape))
        return customop.new_empty(x, tuple(x.shape[i] for i in order))

    moveaxis.register_autograd(
        lambda ctx, g: (moveaxis(g, ctx.destination, ctx.source), None, None),
        setup_context=_save("x", "source", "destination"),
    )

    def front(x: Any, dim: int | None) -> Any:
        return x if dim in (None, 0) else moveaxis(x, dim, 0)

    @moveaxis.register_vmap
    def _(info: Any, in_dims: Any, x: Any, source: int, destination: int) -> Any:
        ndim = len(x.shape) - 1
        return moveaxis(front(x, in_dims[0]), source % ndim + 1, destination % ndim + 1), 0

    @custom_op("vt::reshape", mutates_args=(), dispatcher=d)
    def reshape(x: np.ndarray, shape: list[int]) -> np.ndarray:
        return x.reshape(shape).copy()

    reshape.register_fake(lambda x, shape: customop.new_empty(x, tuple(shape)))
    reshape.register_autograd(
        lambda ctx, g: (reshape(g, list(ctx.x.shape)), None), setup_context=_save("x")
    )

    @reshape.register_vmap
    def _(info: Any, in_dims: Any, x: Any, shape: list[int]) -> Any:
        return reshape(front(x, in_dims[0]), [info.batch_size, *shape]), 0

    @custom_op("vt::sum_dim", mutates_args=(), dispatcher=d)
    def sum_dim(x: np.ndarray, dim: int) -> np.ndarray:
        return np.asarray(x.sum(dim))

    @sum_dim.register_fake
    def _(x: Any, dim: int) -> Any:
        shape = list(x.shape)
        del shape[dim]
        return customop.new_empty(x, tuple(shape))

    def sum_dim_backward(ctx: Any, g: Any) -> Any:
        dim = ctx.dim % len(ctx.x.shape)
        return np.ones(ctx.x.shape) * _keepdim(g, dim), None

    sum_dim.register_autograd(sum_dim_backward, setup_context=_save("x", "dim"))

    @sum_dim.register_vmap
    def _(info: Any, in_dims: Any, x: Any, dim: int) -> Any:
        return sum_dim(front(x, in_dims[0]), dim % (len(x.shape) - 1) + 1), 0

    @custom_op("vt::sum_to", mutates_args=(), dispatcher=d)
    def sum_to(x: np.ndarray, shape: list[int]) -> np.ndarray:
        extra = x.ndim - len(shape)
        out = x.sum(tuple(range(extra))) if extra else x
        ones = tuple(i for i, size in enumerate(shape) if size == 1 and out.shape[i] != 1)
        return np.asarray(out.sum(ones, keepdims=True) if ones else out).copy()

    sum_to.register_fake(lambda x, shape: customop.new_empty(x, tuple(shape)))
    sum_to.register_autograd(
        lambda ctx, g: (np.ones(ctx.x.shape) * g, None), setup_context=_save("x")
    )

    @sum_to.register_vmap
    def _(info: Any, in_dims: Any, x: Any, shape: list[int]) -> Any:
        extra = len(x.shape) - 1 - len(shape)
        moved = x if in_dims[0] == extra else moveaxis(x, in_dims[0], extra)
        return sum_to(moved, [info.batch_size, *shape]), 0

    @custom_op("vt::total", mutates_args=(), dispatcher=d)
    def total(x: np.ndarray) -> np.ndarray:
        return np.asarray(x.sum())

    total.register_fake(lambda x: customop.new_empty(x, ()))
    total.register_autograd(lambda ctx, g: np.ones(ctx.x.shape) * g, setup_context=_save("x"))

    @total.register_vmap
    def _(info: Any, in_dims: Any, x: Any) -> Any:
        x0 = front(x, in_dims[0])
        flat = reshape(x0, [info.batch_size, math.prod(x0.shape[1:])])
        return sum_dim(flat, 1), 0

    # -- the ops under test -----------------------------------------------------------

    @custom_op("vt::sin", mutates_args=(), dispatcher=d)
    def sin(x: np.ndarray) -> np.ndarray:
        return np.sin(x)

    sin.register_fake(lambda x: customop.empty_like(x))
    sin.register_autograd(lambda ctx, g: g * np.cos(ctx.x), setup_context=_save("x"))

    @sin.register_vmap
    def sin_rule(info: Any, in_dims: Any, x: Any) -> Any:
        return sin(x), in_dims[0]

    @custom_op("vt::matmul", mutates_args=(), dispatcher=d)
    def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.matmul(a, b)

    @matmul.register_fake
    def _(a: Any, b: Any) -> Any:
        lead = a.shape[:-2] if len(a.shape) > len(b.shape) else b.shape[:-2]
        return customop.new_empty(a, (*lead, a.shape[-2], b.shape[-1]))

    def matmul_backward(ctx: Any, g: Any) -> Any:
        a, b = ctx.a, ctx.b
        grad_a = matmul(g, moveaxis(b, -1, -2))
        grad_b = matmul(moveaxis(a, -1, -2), g)
        return sum_to(grad_a, list(a.shape)), sum_to(grad_b, list(b.shape))

    matmul.register_autograd(matmul_backward, setup_context=_save("a", "b"))

    @matmul.register_vmap
    def _(info: Any, in_dims: Any, a: Any, b: Any) -> Any:
        return matmul(front(a, in_dims[0]), front(b, in_dims[1])), 0

    @custom_op("vt::softmax", mutates_args=(), dispatcher=d)
    def softmax(x: np.ndarray, dim: int) -> np.ndarray:
        e = np.exp(x - x.max(dim, keepdims=True))
        return e / e.sum(dim, keepdims=True)

    softmax.register_fake(lambda x, dim: customop.empty_like(x))

    def softmax_backward(ctx: Any, g: Any) -> Any:
        s, dim = ctx.output, ctx.dim % len(ctx.output.shape)
        return s * (g - _keepdim(sum_dim(g * s, dim), dim)), None

    softmax.register_autograd(softmax_backward, setup_context=_save("x", "dim"))

    @softmax.register_vmap
    def _(info: Any, in_dims: Any, x: Any, dim: int) -> Any:
        return softmax(front(x, in_dims[0]), dim % (len(x.shape) - 1) + 1), 0

    @custom_op("vt::layer_norm", mutates_args=(), dispatcher=d)
    def layer_norm(
        x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None, eps: float
    ) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        out = (x - mean) / np.sqrt(x.var(-1, keepdims=True) + eps)
        out = out if weight is None else out * weight
        return out if bias is None else out + bias

    layer_norm.register_fake(lambda x, weight, bias, eps: customop.empty_like(x))

    def layer_norm_backward(ctx: Any, g: Any) -> Any:
        x, w, eps = ctx.x, ctx.weight, ctx.eps
        size = x.shape[-1]

        def mean(v: Any) -> Any:  # over the last dimension, kept
            return sum_dim(v, -1)[..., None] / size

        centered = x - mean(x)
        rstd = 1 / (mean(centered * centered) + eps) ** 0.5
        xhat = centered * rstd
        gw = g if w is None else g * w
        # Summed to x's shape: x may broadcast against a weight with more dimensions.
        grad_x = sum_to(rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), list(x.shape))
        grad_w = None if w is None else sum_to(g * xhat, list(w.shape))
        grad_b = None if ctx.bias is None else sum_to(g, list(ctx.bias.shape))
        return grad_x, grad_w, grad_b, None

    layer_norm.register_autograd(
        layer_norm_backward, setup_context=_save("x", "weight", "bias", "eps")
    )

    @layer_norm.register_vmap
    def _(  # noqa: PLR0917 -- torch's rule signature: info, in_dims, the op's arguments
        info: Any, in_dims: Any, x: Any, weight: Any, bias: Any, eps: float
    ) -> Any:
        x0 = front(x, in_dims[0])
        inner = len(x.shape) - 2 if in_dims[0] is not None else len(x.shape) - 1

        def param(p: Any, dim: int | None) -> Any:
            if p is None or dim is None:
                return p
            # (N, D) against x (N, ..., D): size-1 dimensions between.
            return reshape(front(p, dim), [info.batch_size, *[1] * inner, p.shape[-1]])

        return layer_norm(x0, param(weight, in_dims[1]), param(bias, in_dims[2]), eps), 0

    @custom_op("vt::shift", mutates_args=(), dispatcher=d)
    def shift(x: np.ndarray, k: int) -> np.ndarray:
        return np.roll(x, k, axis=-1)

    shift.register_fake(lambda x, k: customop.empty_like(x))
    shift.register_autograd(lambda ctx, g: (shift(g, -ctx.k), None), setup_context=_save("x", "k"))

    @shift.register_vmap
    def _(info: Any, in_dims: Any, x: Any, k: int) -> Any:
        return shift(front(x, in_dims[0]), k), 0

    @custom_op("vt::minmax", mutates_args=(), dispatcher=d)
    def minmax(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return x.min(-1), x.max(-1)

    @minmax.register_fake
    def _(x: Any) -> Any:
        shape = tuple(x.shape[:-1])
        return customop.new_empty(x, shape), customop.new_empty(x, shape)

    def minmax_backward(ctx: Any, g_min: Any, g_max: Any) -> Any:
        low, high = ctx.output
        last = len(ctx.x.shape) - 1
        at_low = ctx.x == _keepdim(low, last)
        at_high = ctx.x == _keepdim(high, last)
        return _keepdim(g_min, last) * at_low + _keepdim(g_max, last) * at_high

    minmax.register_autograd(minmax_backward, setup_context=_save("x"))

    @minmax.register_vmap
    def _(info: Any, in_dims: Any, x: Any) -> Any:
        return minmax(front(x, in_dims[0])), (0, 0)

    @custom_op("vt::sum_list", mutates_args=(), dispatcher=d)
    def sum_list(xs: list[np.ndarray]) -> np.ndarray:
        out = xs[0].copy()
        for item in xs[1:]:
            out = out + item
        return out

    sum_list.register_fake(lambda xs: customop.empty_like(xs[0]))
    sum_list.register_autograd(
        lambda ctx, g: [sum_to(g, list(x.shape)) for x in ctx.xs], setup_context=_save("xs")
    )

    @sum_list.register_vmap
    def _(info: Any, in_dims: Any, xs: list[Any]) -> Any:
        return sum_list([front(x, dim) for x, dim in zip(xs, in_dims[0], strict=True)]), 0

    @custom_op("vt::split_last", mutates_args=(), dispatcher=d)
    def split_last(x: np.ndarray, parts: int) -> list[np.ndarray]:
        return [part.copy() for part in np.split(x, parts, axis=-1)]

    @split_last.register_vmap
    def _(info: Any, in_dims: Any, x: Any, parts: int) -> Any:
        return split_last(front(x, in_dims[0]), parts), 0

    @custom_op("vt::scale_", mutates_args=("x",), dispatcher=d)
    def scale_(x: np.ndarray, factor: float) -> None:
        x *= factor

    @scale_.register_vmap
    def _(info: Any, in_dims: Any, x: Any, factor: float) -> Any:
        scale_(x, factor)  # elementwise: wherever the batch dimension is
        return None, None

    @custom_op("vt::noise_like", mutates_args=(), dispatcher=d, tags="nondeterministic_seeded")
    def noise_like(x: np.ndarray) -> np.ndarray:
        return RNG["rng"].standard_normal(x.shape)

    @noise_like.register_vmap
    def _(info: Any, in_dims: Any, x: Any) -> Any:
        if info.randomness == "same":
            one = x if in_dims[0] is None else np.take(x, 0, axis=in_dims[0])
            return noise_like(one), None
        many = x if in_dims[0] is not None else np.broadcast_to(x, (info.batch_size, *x.shape))
        return noise_like(many), 0 if in_dims[0] is None else in_dims[0]

    return SimpleNamespace(**{k: v for k, v in locals().items() if k not in {"d", "_"}})

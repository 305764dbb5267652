"""Twelve ops restated from real JAX and torch code, each defined once for customop.

Every kernel is written once against an array namespace ``xp``: the op's CPU
kernel is it with numpy, its ``"jax"`` kernel with ``jax.numpy`` (the numpy-only
``cumsum`` has no jax kernel, so JAX runs it through ``jax.pure_callback``).
Backwards are ops too (as torch's ``_flash_attention_backward`` is), with jax
kernels, so a backward is itself a JAX primitive. Sources of the math:

* ``layer_norm`` / its backward: ``torch.nn.functional.layer_norm`` (weight and
  bias optional), the formulas of ``aten/src/ATen/native/cpu/layer_norm_kernel.cpp``;
* ``rms_norm``: ``torch.nn.functional.rms_norm`` / T5 and LLaMA's ``RMSNorm``;
* ``softmax``: ``torch.softmax`` and ``_softmax_backward_data``;
* ``attention`` (returns the output and the log-sum-exp, like
  ``torch.ops.aten._flash_attention_forward``) and ``attention_backward``: the
  reference math of FlashAttention-2 (``delta = rowsum(dO * O)``);
* ``rotary``: ``apply_rotary_pos_emb`` / ``rotate_half`` of LLaMA and GPT-NeoX;
* ``gelu``: ``torch.nn.functional.gelu`` with ``approximate`` a Literal;
* ``sum_dim`` / ``broadcast_dim``: ``torch.sum(x, dim, keepdim)`` and ``expand``;
* ``max_dim``: ``torch.max(x, dim)`` (two outputs, the second integer);
* ``concat`` / ``split``: ``torch.cat`` (a Tensor[] input) and
  ``torch.split_with_sizes`` (a Tensor[] output);
* ``cumsum``: ``numpy.cumsum``, a CPU-only numpy kernel;
* ``swiglu``: LLaMA's MLP gate, ``x * silu(gate)``;
* ``cross_entropy``: ``torch.nn.functional.cross_entropy`` with a Literal reduction.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from types import SimpleNamespace
from typing import Any

import jax.numpy as jnp
import jax.scipy.special
import numpy as np

import customop
from customop import Dispatcher, Library

NS = "jt"


def _erf(xp: Any, x: Any) -> Any:
    if xp is jnp:
        return jax.scipy.special.erf(x)
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


# -- kernels, once per array namespace -----------------------------------------------


def layer_norm(xp: Any, x: Any, weight: Any, bias: Any, eps: float) -> Any:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    y = (x - mean) / xp.sqrt(var + eps)
    y = y if weight is None else y * weight
    return y if bias is None else y + bias


def layer_norm_backward(xp: Any, grad: Any, x: Any, weight: Any, eps: float) -> Any:
    mean = x.mean(-1, keepdims=True)
    rstd = 1 / xp.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    xhat = (x - mean) * rstd
    gw = grad if weight is None else grad * weight
    dx = rstd * (gw - gw.mean(-1, keepdims=True) - xhat * (gw * xhat).mean(-1, keepdims=True))
    lead = tuple(range(x.ndim - 1))
    return dx, (grad * xhat).sum(lead), grad.sum(lead)


def rms_norm(xp: Any, x: Any, weight: Any, eps: float) -> Any:
    return x / xp.sqrt((x * x).mean(-1, keepdims=True) + eps) * weight


def rms_norm_backward(xp: Any, grad: Any, x: Any, weight: Any, eps: float) -> Any:
    rstd = 1 / xp.sqrt((x * x).mean(-1, keepdims=True) + eps)
    xhat = x * rstd
    gw = grad * weight
    dx = rstd * (gw - xhat * (gw * xhat).mean(-1, keepdims=True))
    return dx, (grad * xhat).sum(tuple(range(x.ndim - 1)))


def softmax(xp: Any, x: Any, dim: int) -> Any:
    e = xp.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def softmax_backward(xp: Any, grad: Any, out: Any, dim: int) -> Any:
    return out * (grad - (grad * out).sum(dim, keepdims=True))


def _scores(xp: Any, q: Any, k: Any, scale: float, causal: bool) -> Any:
    s = (q @ xp.swapaxes(k, -1, -2)) * scale
    if causal:
        mask = xp.tril(xp.ones(s.shape[-2:], dtype=bool))
        s = xp.where(mask, s, -xp.inf)
    return s


# PLR0917 below: a kernel takes the schema's arguments by position, as dispatch passes them.
def attention(xp: Any, q: Any, k: Any, v: Any, scale: float, causal: bool) -> Any:  # noqa: PLR0917
    s = _scores(xp, q, k, scale, causal)
    m = s.max(-1, keepdims=True)
    lse = m + xp.log(xp.exp(s - m).sum(-1, keepdims=True))
    return xp.exp(s - lse) @ v, lse[..., 0]


def attention_backward(  # noqa: PLR0917
    xp: Any,
    dout: Any,
    dlse: Any,
    q: Any,
    k: Any,
    v: Any,
    out: Any,
    lse: Any,
    scale: float,
    causal: bool,
) -> Any:
    p = xp.exp(_scores(xp, q, k, scale, causal) - lse[..., None])
    dv = xp.swapaxes(p, -1, -2) @ dout
    delta = (dout * out).sum(-1, keepdims=True)
    ds = p * (dout @ xp.swapaxes(v, -1, -2) - delta + dlse[..., None])
    return (ds @ k) * scale, (xp.swapaxes(ds, -1, -2) @ q) * scale, dv


def rotary(xp: Any, x: Any, cos: Any, sin: Any, inverse: bool) -> Any:
    half = x.shape[-1] // 2
    rotated = xp.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos - rotated * sin if inverse else x * cos + rotated * sin


def gelu(xp: Any, x: Any, approximate: str) -> Any:
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
        return 0.5 * x * (1 + xp.tanh(inner))
    return 0.5 * x * (1 + _erf(xp, x / math.sqrt(2)))


def gelu_backward(xp: Any, grad: Any, x: Any, approximate: str) -> Any:
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        t = xp.tanh(k * (x + 0.044715 * x**3))
        return grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x))
    cdf = 0.5 * (1 + _erf(xp, x / math.sqrt(2)))
    return grad * (cdf + x * xp.exp(-0.5 * x * x) / math.sqrt(2 * math.pi))


def sum_dim(xp: Any, x: Any, dim: int, keepdim: bool) -> Any:
    return x.sum(dim, keepdims=keepdim)


def broadcast_dim(xp: Any, grad: Any, sizes: list[int], dim: int, keepdim: bool) -> Any:
    expanded = grad if keepdim else xp.expand_dims(grad, dim)
    return xp.broadcast_to(expanded, tuple(sizes)) * 1  # * 1: a new array, not a view


def max_dim(xp: Any, x: Any, dim: int) -> Any:
    return x.max(dim), x.argmax(dim)


def max_dim_backward(xp: Any, grad: Any, indices: Any, x: Any, dim: int) -> Any:
    axis = dim % x.ndim
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    hot = xp.arange(x.shape[axis]).reshape(shape) == xp.expand_dims(indices, axis)
    return hot * xp.expand_dims(grad, axis)


def concat(xp: Any, xs: list[Any], dim: int) -> Any:
    return xp.concatenate(xs, axis=dim)


def split(xp: Any, x: Any, sizes: list[int], dim: int) -> Any:
    return list(xp.split(x, list(np.cumsum(sizes)[:-1]), axis=dim))


def cumsum(x: Any, dim: int) -> Any:
    return np.cumsum(x, axis=dim)


def rev_cumsum(x: Any, dim: int) -> Any:
    return np.flip(np.cumsum(np.flip(x, dim), axis=dim), dim).copy()


def _sigmoid(xp: Any, x: Any) -> Any:
    return 1 / (1 + xp.exp(-x))


def swiglu(xp: Any, x: Any, gate: Any) -> Any:
    return x * gate * _sigmoid(xp, gate)


def swiglu_backward(xp: Any, grad: Any, x: Any, gate: Any) -> Any:
    sig = _sigmoid(xp, gate)
    return grad * gate * sig, grad * x * sig * (1 + gate * (1 - sig))


def _log_softmax(xp: Any, logits: Any) -> Any:
    m = logits.max(-1, keepdims=True)
    return logits - m - xp.log(xp.exp(logits - m).sum(-1, keepdims=True))


def cross_entropy(xp: Any, logits: Any, target: Any, reduction: str) -> Any:
    picked = xp.take_along_axis(_log_softmax(xp, logits), target[:, None], axis=-1)[:, 0]
    total = -picked.sum()
    return total / logits.shape[0] if reduction == "mean" else total


def cross_entropy_backward(xp: Any, grad: Any, logits: Any, target: Any, reduction: str) -> Any:
    hot = xp.arange(logits.shape[-1])[None, :] == target[:, None]
    scale = grad / logits.shape[0] if reduction == "mean" else grad
    return (xp.exp(_log_softmax(xp, logits)) - hot) * scale


# -- definitions ----------------------------------------------------------------------

SCHEMAS = {
    "layer_norm": "layer_norm(Tensor x, Tensor? weight=None, Tensor? bias=None, float eps=1e-05)"
    " -> Tensor",
    "layer_norm_backward": "layer_norm_backward(Tensor grad, Tensor x, Tensor? weight, float eps)"
    " -> (Tensor, Tensor, Tensor)",
    "rms_norm": "rms_norm(Tensor x, Tensor weight, float eps=1e-06) -> Tensor",
    "rms_norm_backward": "rms_norm_backward(Tensor grad, Tensor x, Tensor weight, float eps)"
    " -> (Tensor, Tensor)",
    "softmax": "softmax(Tensor x, int dim=-1) -> Tensor",
    "softmax_backward": "softmax_backward(Tensor grad, Tensor out, int dim) -> Tensor",
    "attention": "attention(Tensor q, Tensor k, Tensor v, float scale, bool causal=False)"
    " -> (Tensor, Tensor)",
    "attention_backward": "attention_backward(Tensor dout, Tensor dlse, Tensor q, Tensor k, "
    "Tensor v, Tensor out, Tensor lse, float scale, bool causal) -> (Tensor, Tensor, Tensor)",
    "rotary": "rotary(Tensor x, Tensor cos, Tensor sin, bool inverse=False) -> Tensor",
    "gelu": "gelu(Tensor x, *, str approximate='none') -> Tensor",
    "gelu_backward": "gelu_backward(Tensor grad, Tensor x, str approximate) -> Tensor",
    "sum_dim": "sum_dim(Tensor x, int dim, bool keepdim=False) -> Tensor",
    "broadcast_dim": "broadcast_dim(Tensor grad, int[] sizes, int dim, bool keepdim) -> Tensor",
    "max_dim": "max_dim(Tensor x, int dim) -> (Tensor, Tensor)",
    "max_dim_backward": "max_dim_backward(Tensor grad, Tensor indices, Tensor x, int dim)"
    " -> Tensor",
    "concat": "concat(Tensor[] xs, int dim=0) -> Tensor",
    "split": "split(Tensor x, int[] sizes, int dim) -> Tensor[]",
    "cumsum": "cumsum(Tensor x, int dim) -> Tensor",
    "rev_cumsum": "rev_cumsum(Tensor x, int dim) -> Tensor",
    "swiglu": "swiglu(Tensor x, Tensor gate) -> Tensor",
    "swiglu_backward": "swiglu_backward(Tensor grad, Tensor x, Tensor gate) -> (Tensor, Tensor)",
    "cross_entropy": "cross_entropy(Tensor logits, Tensor target, str reduction='mean') -> Tensor",
    "cross_entropy_backward": "cross_entropy_backward(Tensor grad, Tensor logits, Tensor target, "
    "str reduction) -> Tensor",
}
NUMPY_ONLY = {"cumsum": cumsum, "rev_cumsum": rev_cumsum}
FAKES: dict[str, Callable[..., Any]] = {
    "layer_norm": lambda x, weight=None, bias=None, eps=1e-05: customop.empty_like(x),
    "layer_norm_backward": lambda grad, x, weight, eps: (
        customop.empty_like(x),
        customop.new_empty(x, x.shape[-1:]),
        customop.new_empty(x, x.shape[-1:]),
    ),
    "rms_norm": lambda x, weight, eps=1e-06: customop.empty_like(x),
    "rms_norm_backward": lambda grad, x, weight, eps: (
        customop.empty_like(x),
        customop.empty_like(weight),
    ),
    "softmax": lambda x, dim=-1: customop.empty_like(x),
    "softmax_backward": lambda grad, out, dim: customop.empty_like(out),
    "attention": lambda q, k, v, scale, causal=False: (
        customop.new_empty(q, (*q.shape[:-1], v.shape[-1])),
        customop.new_empty(q, q.shape[:-1]),
    ),
    "attention_backward": lambda dout, dlse, q, k, v, out, lse, scale, causal: (
        customop.empty_like(q),
        customop.empty_like(k),
        customop.empty_like(v),
    ),
    "rotary": lambda x, cos, sin, inverse=False: customop.empty_like(x),
    "gelu": lambda x, *, approximate="none": customop.empty_like(x),
    "gelu_backward": lambda grad, x, approximate: customop.empty_like(x),
    "sum_dim": lambda x, dim, keepdim=False: customop.new_empty(x, _reduced(x.shape, dim, keepdim)),
    "broadcast_dim": lambda grad, sizes, dim, keepdim: customop.new_empty(grad, tuple(sizes)),
    "max_dim": lambda x, dim: (
        customop.new_empty(x, _reduced(x.shape, dim, False)),
        customop.new_empty(x, _reduced(x.shape, dim, False), dtype=customop.int64),
    ),
    "max_dim_backward": lambda grad, indices, x, dim: customop.empty_like(x),
    "concat": lambda xs, dim=0: customop.new_empty(xs[0], _joined(xs, dim)),
    "split": lambda x, sizes, dim: [
        customop.new_empty(x, _resized(x.shape, dim, size)) for size in sizes
    ],
    "cumsum": lambda x, dim: customop.empty_like(x),
    "rev_cumsum": lambda x, dim: customop.empty_like(x),
    "swiglu": lambda x, gate: customop.empty_like(x),
    "swiglu_backward": lambda grad, x, gate: (customop.empty_like(x), customop.empty_like(gate)),
    "cross_entropy": lambda logits, target, reduction="mean": customop.new_empty(logits, ()),
    "cross_entropy_backward": lambda grad, logits, target, reduction: customop.empty_like(logits),
}


def _reduced(shape: tuple[Any, ...], dim: int, keepdim: bool) -> tuple[Any, ...]:
    axis = dim % len(shape)
    return (*shape[:axis], 1, *shape[axis + 1 :]) if keepdim else shape[:axis] + shape[axis + 1 :]


def _resized(shape: tuple[Any, ...], dim: int, size: Any) -> tuple[Any, ...]:
    axis = dim % len(shape)
    return (*shape[:axis], size, *shape[axis + 1 :])


def _joined(xs: list[Any], dim: int) -> tuple[Any, ...]:
    axis = dim % len(xs[0].shape)
    return _resized(xs[0].shape, axis, sum(x.shape[axis] for x in xs))


def _kernel(name: str, xp: Any) -> Callable[..., Any]:
    """The kernel of ``name`` with ``xp``, its parameters named as the schema's."""
    return partial(globals()[name], xp)


def define(dispatcher: Dispatcher) -> tuple[SimpleNamespace, Library]:
    """Define every op (kernels, fakes, formulas) in ``dispatcher``; the ops and their library."""
    lib = Library(NS, "DEF", dispatcher=dispatcher)
    for name, schema in SCHEMAS.items():
        lib.define(schema)
        qualname = f"{NS}::{name}"
        if name in NUMPY_ONLY:
            customop.register_kernel(qualname, "cpu", NUMPY_ONLY[name], lib=lib)
        else:
            customop.register_kernel(qualname, "cpu", _kernel(name, np), lib=lib)
            customop.register_kernel(qualname, "jax", _kernel(name, jnp), lib=lib)
        customop.register_fake(qualname, FAKES[name], lib=lib)
    ops = SimpleNamespace(
        **{name: dispatcher.find_schema_or_throw(f"{NS}::{name}") for name in SCHEMAS}
    )
    _formulas(ops, dispatcher)
    return ops, lib


def _formulas(ops: SimpleNamespace, d: Dispatcher) -> None:
    def formula(name: str, backward: Any, setup: Any = None) -> None:
        setup = setup or _keep_inputs
        customop.register_autograd(getattr(ops, name), backward, setup_context=setup, dispatcher=d)

    _layer_formulas(ops, formula)
    _shape_formulas(ops, formula)


def _keep_inputs(ctx: Any, inputs: Any, output: Any) -> None:
    ctx.inputs = inputs


def _keep_all(ctx: Any, inputs: Any, output: Any) -> None:
    ctx.inputs, ctx.output = inputs, output


def _layer_formulas(ops: SimpleNamespace, formula: Callable[..., None]) -> None:
    """Network layers: norms, softmax, attention, rotary, gelu, swiglu, cross entropy."""

    def layer_norm_bwd(ctx: Any, grad: Any) -> Any:
        x, weight, bias, eps = ctx.inputs
        dx, dw, db = ops.layer_norm_backward(grad, x, weight, eps)
        return dx, None if weight is None else dw, None if bias is None else db, None

    def rms_norm_bwd(ctx: Any, grad: Any) -> Any:
        x, weight, eps = ctx.inputs
        return (*ops.rms_norm_backward(grad, x, weight, eps), None)

    def softmax_bwd(ctx: Any, grad: Any) -> Any:
        return ops.softmax_backward(grad, ctx.output, ctx.inputs[1]), None

    def attention_bwd(ctx: Any, dout: Any, dlse: Any) -> Any:
        q, k, v, scale, causal = ctx.inputs
        out, lse = ctx.output
        grads = ops.attention_backward(dout, dlse, q, k, v, out, lse, scale, causal)
        return (*grads, None, None)

    def rotary_bwd(ctx: Any, grad: Any) -> Any:
        _, cos, sin, inverse = ctx.inputs
        return ops.rotary(grad, cos, sin, not inverse), None, None, None

    def gelu_setup(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.save_for_backward(inputs[0])
        ctx.approximate = inputs[1]

    def gelu_bwd(ctx: Any, grad: Any) -> Any:
        (x,) = ctx.saved_tensors
        return ops.gelu_backward(grad, x, ctx.approximate), None

    def swiglu_bwd(ctx: Any, grad: Any) -> Any:
        return ops.swiglu_backward(grad, *ctx.inputs)

    def cross_entropy_bwd(ctx: Any, grad: Any) -> Any:
        logits, target, reduction = ctx.inputs
        return ops.cross_entropy_backward(grad, logits, target, reduction), None, None

    formula("layer_norm", layer_norm_bwd)
    formula("rms_norm", rms_norm_bwd)
    formula("softmax", softmax_bwd, _keep_all)
    formula("attention", attention_bwd, _keep_all)
    formula("rotary", rotary_bwd)
    formula("gelu", gelu_bwd, gelu_setup)
    formula("swiglu", swiglu_bwd)
    formula("cross_entropy", cross_entropy_bwd)


def _shape_formulas(ops: SimpleNamespace, formula: Callable[..., None]) -> None:
    """Reductions, concatenation and scans, whose backwards have formulas too (second order)."""

    def sum_setup(ctx: Any, inputs: Any, output: Any) -> None:
        x, ctx.dim, ctx.keepdim = inputs
        ctx.sizes = list(x.shape)

    def sum_bwd(ctx: Any, grad: Any) -> Any:
        return ops.broadcast_dim(grad, ctx.sizes, ctx.dim, ctx.keepdim), None, None

    def broadcast_bwd(ctx: Any, grad: Any) -> Any:
        _, _, dim, keepdim = ctx.inputs
        return ops.sum_dim(grad, dim, keepdim), None, None, None

    def max_bwd(ctx: Any, grad: Any, _indices_grad: Any) -> Any:
        x, dim = ctx.inputs
        return ops.max_dim_backward(grad, ctx.output[1], x, dim), None

    def concat_setup(ctx: Any, inputs: Any, output: Any) -> None:
        xs, ctx.dim = inputs
        ctx.sizes = [x.shape[ctx.dim] for x in xs]

    def concat_bwd(ctx: Any, grad: Any) -> Any:
        return ops.split(grad, ctx.sizes, ctx.dim), None

    def split_bwd(ctx: Any, grads: Any) -> Any:
        return ops.concat(grads, ctx.inputs[2]), None, None

    def cumsum_bwd(ctx: Any, grad: Any) -> Any:
        return ops.rev_cumsum(grad, ctx.inputs[1]), None

    def rev_cumsum_bwd(ctx: Any, grad: Any) -> Any:
        return ops.cumsum(grad, ctx.inputs[1]), None

    formula("sum_dim", sum_bwd, sum_setup)
    formula("broadcast_dim", broadcast_bwd)
    formula("max_dim", max_bwd, _keep_all)
    formula("concat", concat_bwd, concat_setup)
    formula("split", split_bwd)
    formula("cumsum", cumsum_bwd)
    formula("rev_cumsum", rev_cumsum_bwd)

"""flash-attention's registration pattern, ported: a forward/backward op pair with a formula.

Run it with ``python examples/flash_attention_autograd.py``. flash-attention
defines ``_flash_attn_forward`` and ``_flash_attn_backward`` as custom ops and
connects them with ``_flash_attn_forward.register_autograd(backward,
setup_context=...)``; the same lines work here, with numpy kernels. Then the
example takes gradients with ``customop.autograd.grad``, checks them with
``customop.gradcheck``, and traces forward and backward into one graph.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import customop
from customop.autograd import grad

Array = np.ndarray


@customop.custom_op("flash_attn::_flash_attn_forward", mutates_args=())
def _flash_attn_forward(q: Array, k: Array, v: Array, softmax_scale: float) -> tuple[Array, Array]:
    scores = q @ np.swapaxes(k, -1, -2) * softmax_scale
    top = scores.max(-1, keepdims=True)
    lse = top + np.log(np.exp(scores - top).sum(-1, keepdims=True))
    return np.exp(scores - lse) @ v, lse[..., 0]


@customop.custom_op("flash_attn::_flash_attn_backward", mutates_args=())
def _flash_attn_backward(  # noqa: PLR0917 -- flash-attention's positional signature
    dout: Array, q: Array, k: Array, v: Array, out: Array, lse: Array, softmax_scale: float
) -> tuple[Array, Array, Array]:
    p = np.exp(q @ np.swapaxes(k, -1, -2) * softmax_scale - lse[..., None])
    dp = dout @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dout * out).sum(-1, keepdims=True)) * softmax_scale
    return ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ dout


@_flash_attn_forward.register_fake
def _(q: Any, k: Any, v: Any, softmax_scale: float) -> tuple[Any, Any]:
    return customop.new_empty(q, (*q.shape[:-1], v.shape[-1])), customop.new_empty(q, q.shape[:-1])


@_flash_attn_backward.register_fake
def _(dout: Any, q: Any, k: Any, v: Any, out: Any, lse: Any, softmax_scale: float) -> Any:  # noqa: PLR0917
    return customop.empty_like(q), customop.empty_like(k), customop.empty_like(v)


def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[Any, Any]) -> None:
    q, k, v, ctx.softmax_scale = inputs
    ctx.save_for_backward(q, k, v, *output)


def backward(ctx: Any, dout: Any, dlse: Any) -> tuple[Any, Any, Any, None]:
    # As flash-attention's: the gradient of the log-sum-exp output is ignored.
    q, k, v, out, lse = ctx.saved_tensors
    dq, dk, dv = _flash_attn_backward(dout, q, k, v, out, lse, ctx.softmax_scale)
    return dq, dk, dv, None


_flash_attn_forward.register_autograd(backward, setup_context=setup_context)


@customop.custom_op("flash_attn::mean", mutates_args=())
def mean(x: Array) -> Array:
    return np.asarray(x.mean())


@customop.custom_op("flash_attn::mean_backward", mutates_args=())
def mean_backward(grad: Array, x: Array) -> Array:
    return np.full(x.shape, grad / x.size, dtype=x.dtype)


mean.register_fake(lambda x: customop.new_empty(x, ()))
mean_backward.register_fake(lambda grad, x: customop.empty_like(x))
mean.register_autograd(
    lambda ctx, grad: mean_backward(grad, ctx.x),
    setup_context=lambda ctx, inputs, output: setattr(ctx, "x", inputs[0]),
)


def loss(q: Array, k: Array, v: Array) -> Array:
    out, _ = _flash_attn_forward(q, k, v, 0.5)
    return mean(out)


def main() -> None:
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 4, 8)) for _ in range(3))
    dq, dk, dv = grad(loss, (0, 1, 2))(q, k, v)
    print("grad shapes:", dq.shape, dk.shape, dv.shape)
    print("gradcheck:", customop.gradcheck(loss, (q, k, v)))
    graph = customop.trace(grad(loss, 2), q, k, v)
    print(graph.code())
    print("re-run matches:", np.allclose(graph.run(q, k, v), dv))


if __name__ == "__main__":
    main()

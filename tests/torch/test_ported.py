"""The five op shapes ported from real projects compile with fullgraph=True once registered."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import customop
import customop.torch


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> None:
    torch._dynamo.reset()


def _compiles(fn: Any, *args: Any) -> None:
    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    expected, got = fn(*args), compiled(*args)
    for e, g in zip(
        expected if isinstance(expected, tuple) else (expected,),
        got if isinstance(got, tuple) else (got,),
        strict=True,
    ):
        assert torch.allclose(e, g)


def test_bitsandbytes_define_register_fake_register_kernel(ns: str, track: list[Any]) -> None:
    lib = customop.Library(ns, "FRAGMENT")
    track.append(lib)
    lib.define(
        "dequantize(Tensor packed, Tensor absmax, int blocksize, ScalarType dtype) -> Tensor"
    )

    def fake(packed: Any, absmax: Any, blocksize: int, dtype: Any) -> Any:
        return customop.empty_like(packed, dtype=dtype)

    def kernel(packed: Any, absmax: Any, blocksize: int, dtype: Any) -> Any:
        scale = absmax.repeat_interleave(blocksize)[: packed.numel()].reshape(packed.shape)
        return (packed.to(dtype) * scale.to(dtype)) / 127

    track.append(customop.handle_of(customop.register_fake(f"{ns}::dequantize", fake)))
    track.append(customop.handle_of(customop.register_kernel(f"{ns}::dequantize", "cpu", kernel)))
    track.append(customop.torch.register(f"{ns}::dequantize"))
    packed = torch.randint(-127, 127, (4, 8), dtype=torch.int8)
    absmax = torch.rand(4) * 3
    op = getattr(customop.ops, ns).dequantize
    _compiles(lambda a, m: op(a, m, 8, torch.float32) * 2, packed, absmax)


def test_vllm_infer_schema_and_library_define(ns: str, track: list[Any]) -> None:
    def silu_and_mul(out: customop.Tensor, x: customop.Tensor) -> None:
        d = x.shape[-1] // 2
        out.copy_(torch.nn.functional.silu(x[..., :d]) * x[..., d:])

    schema = customop.infer_schema(silu_and_mul, mutates_args=("out",))
    lib = customop.Library(ns, "FRAGMENT")
    track.append(lib)
    lib.define(f"silu_and_mul{schema}")
    lib.impl("silu_and_mul", silu_and_mul, "CPU")
    track.append(
        customop.handle_of(customop.register_fake(f"{ns}::silu_and_mul", lambda out, x: None))
    )
    track.append(customop.torch.register(ns))

    op = getattr(torch.ops, ns).silu_and_mul  # vLLM calls torch.ops._C.silu_and_mul

    def fn(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty(x.shape[0], x.shape[1] // 2)
        op(out, x)
        return out

    _compiles(fn, torch.randn(3, 8))


def test_flash_attention_forward_backward_with_register_autograd(ns: str, track: list[Any]) -> None:
    @customop.custom_op(f"{ns}::attn_fwd", mutates_args=())
    def attn_fwd(
        q: customop.Tensor, k: customop.Tensor, v: customop.Tensor, scale: float
    ) -> tuple[customop.Tensor, customop.Tensor]:
        p = torch.softmax(q @ k.transpose(-1, -2) * scale, dim=-1)
        return p @ v, p

    @attn_fwd.register_fake
    def _(q: Any, k: Any, v: Any, scale: float) -> Any:
        return customop.new_empty(q, (*q.shape[:-1], v.shape[-1])), customop.new_empty(
            q, (*q.shape[:-1], k.shape[-2])
        )

    @customop.custom_op(f"{ns}::attn_bwd", mutates_args=())
    def attn_bwd(  # noqa: PLR0917 -- flash-attention's backward takes its tensors positionally
        grad: customop.Tensor,
        q: customop.Tensor,
        k: customop.Tensor,
        v: customop.Tensor,
        p: customop.Tensor,
        scale: float,
    ) -> tuple[customop.Tensor, customop.Tensor, customop.Tensor]:
        dv = p.transpose(-1, -2) @ grad
        dp = grad @ v.transpose(-1, -2)
        ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * scale
        return ds @ k, ds.transpose(-1, -2) @ q, dv

    attn_bwd.register_fake(
        lambda grad, q, k, v, p, scale: (
            customop.empty_like(q),
            customop.empty_like(k),
            customop.empty_like(v),
        )
    )

    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        q, k, v, scale = inputs
        ctx.save_for_backward(q, k, v, output[1])
        ctx.scale = scale

    def backward(ctx: Any, grad: Any, _grad_p: Any) -> Any:
        q, k, v, p = ctx.saved_tensors
        dq, dk, dv = attn_bwd(grad, q, k, v, p, ctx.scale)
        return dq, dk, dv, None

    attn_fwd.register_autograd(backward, setup_context=setup_context)
    track += [attn_fwd, attn_bwd, customop.torch.register(ns)]
    q, k, v = (torch.randn(2, 5, 4, dtype=torch.float64, requires_grad=True) for _ in range(3))

    def fn(q: Any, k: Any, v: Any) -> Any:
        return attn_fwd(q, k, v, 0.5)[0]

    _compiles(fn, q, k, v)
    assert torch.autograd.gradcheck(fn, (q, k, v))


def test_torchao_composite_implicit_body(ns: str, track: list[Any]) -> None:
    lib = customop.Library(ns, "FRAGMENT")
    track.append(lib)
    lib.define("int8_linear(Tensor x, Tensor w, Tensor scale) -> Tensor")
    lib.impl(
        "int8_linear",
        lambda x, w, scale: (x @ w.to(x.dtype).t()) * scale,
        "CompositeImplicitAutograd",
    )
    track.append(customop.torch.register(ns))
    w = torch.randint(-127, 127, (6, 4), dtype=torch.int8)
    op = getattr(customop.ops, ns).int8_linear
    _compiles(lambda x, s: op(x, w, s), torch.randn(3, 4), torch.rand(6))


def test_diffusers_op_with_15_optional_parameters(ns: str, track: list[Any]) -> None:
    @customop.custom_op(f"{ns}::attention", mutates_args=())
    def attention(  # noqa: PLR0917 -- diffusers' signature, every parameter positional
        query: customop.Tensor,
        key: customop.Tensor | None = None,
        value: customop.Tensor | None = None,
        attn_mask: customop.Tensor | None = None,
        bias: customop.Tensor | None = None,
        dropout_p: float | None = None,
        is_causal: bool | None = None,
        scale: float | None = None,
        enable_gqa: bool | None = None,
        window: int | None = None,
        softcap: float | None = None,
        alibi: customop.Tensor | None = None,
        lse: bool | None = None,
        deterministic: bool | None = None,
        backend: str | None = None,
        seed: int | None = None,
    ) -> customop.Tensor:
        k = query if key is None else key
        v = query if value is None else value
        out = torch.softmax(query @ k.transpose(-1, -2) * (scale or 1.0), -1) @ v
        return out if bias is None else out + bias

    attention.register_fake(lambda query, *args, **kwargs: customop.empty_like(query))
    track += [attention, customop.torch.register(attention)]
    assert len(attention.schema.arguments) == 16
    q, b = torch.randn(2, 3, 4), torch.randn(2, 3, 4)
    _compiles(lambda q, b: attention(q, bias=b, scale=0.5, backend="math"), q, b)

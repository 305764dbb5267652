"""The 12 ported ops again, on torch tensors, with their fakes as the originals write them.

The other port modules restate each project's registrations with numpy
kernels and customop's fake factories. Here the same 12 ops keep the
originals' fake impls, written with torch's API (``torch.empty``,
``torch.empty_like``, ``x.new_empty``, ``torch._check``, torch dtypes), and
get torch kernels; ``customop.opcheck`` checks each on torch tensors, so the
fakes run on customop's fakes (``FakeTensor.__torch_function__``) and are
compared with the kernels' outputs, strides included. The ops live in a
dispatcher of this module's own.
"""

# The ported code keeps the originals' names and signatures (A, B, splitK, many
# positional parameters), so that it reads as the code it restates.
# ruff: noqa: N803, N806

from __future__ import annotations

from math import prod
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import customop  # noqa: E402
from customop.library import Ops  # noqa: E402
from customop.tensor import install_backends  # noqa: E402

d = customop.Dispatcher()
install_backends(d)
ops = Ops(d)
Tensor = torch.Tensor
TORCH_CHECKS = (
    "test_schema",
    "test_autograd_registration",
    "test_faketensor",
    "test_aot_dispatch_dynamic",
)


def _register(qualname: str, schema: str, fake: Any, kernel: Any, key: str = "CPU") -> None:
    customop.define(qualname, schema, dispatcher=d)
    customop.register_fake(qualname, fake, dispatcher=d)
    customop.impl(qualname, key, kernel, dispatcher=d)


# -- bitsandbytes/_ops.py ----------------------------------------------------------------


def int8_linear_matmul_fake(A: Tensor, B: Tensor) -> Tensor:
    torch._check(A.dtype == torch.int8, lambda: "A must be int8")
    torch._check(B.dtype == torch.int8, lambda: "B must be int8")
    shapeC = (*A.shape[:-1], B.shape[0])
    return torch.empty(shapeC, device=A.device, dtype=torch.int32)


def int8_linear_matmul_out_fake(A: Tensor, B: Tensor, out: Tensor) -> None:
    shapeC = (*A.shape[:-1], B.shape[0])
    torch._check(out.shape == shapeC, lambda: f"Expected out.shape == {shapeC}, got {out.shape}")
    torch._check(out.device == A.device, lambda: "out must be on A's device")
    torch._check(out.dtype == torch.int32, lambda: f"Expected out.dtype int32, got {out.dtype}")


def int8_vectorwise_quant_fake(A: Tensor, threshold: float = 0.0) -> Any:
    out_row = torch.empty(A.shape, device=A.device, dtype=torch.int8)
    row_stats = torch.empty(prod(A.shape[:-1]), device=A.device, dtype=torch.float32)
    if threshold == 0.0:
        return out_row, row_stats, None
    outlier_cols = customop.get_ctx().new_dynamic_size()
    return out_row, row_stats, A.new_empty(outlier_cols, dtype=torch.int64)


def int8_vectorwise_quant_cpu(A: Tensor, threshold: float = 0.0) -> Any:
    outliers = None
    if threshold > 0.0:
        outliers = (A.abs().reshape(-1, A.shape[-1]) >= threshold).any(0).nonzero().flatten()
        A = A.clone()
        A[..., outliers] = 0
    row_stats = A.abs().amax(-1).reshape(-1).float()
    scale = (127.0 / row_stats).reshape((*A.shape[:-1], 1))
    return torch.round(A * scale).to(torch.int8), row_stats, outliers


def int8_vectorwise_dequant_fake(A: Tensor, stats: Tensor) -> Tensor:
    torch._check(A.dtype == torch.int8, lambda: "A must be int8")
    torch._check(stats.dtype == torch.float32, lambda: "stats must be float32")
    return torch.empty_like(A, dtype=torch.float32)


def dequantize_blockwise_fake(
    A: Tensor, absmax: Tensor, code: Tensor, blocksize: int, dtype: Any
) -> Tensor:
    torch._check_is_size(blocksize)
    torch._check(A.dtype == torch.uint8, lambda: f"A must be uint8, got {A.dtype}")
    return torch.empty_like(A, dtype=dtype)


def dequantize_blockwise_cpu(
    A: Tensor, absmax: Tensor, code: Tensor, blocksize: int, dtype: Any
) -> Tensor:
    scales = absmax.repeat_interleave(blocksize)[: A.numel()].reshape(A.shape)
    return (code[A.long()] * scales).to(dtype)


_register(
    "bitsandbytes::int8_linear_matmul",
    "(Tensor A, Tensor B) -> Tensor",
    int8_linear_matmul_fake,
    lambda A, B: torch.matmul(A.int(), B.int().T),
)


def int8_linear_matmul_out_cpu(A: Tensor, B: Tensor, out: Tensor) -> None:
    out.copy_(torch.matmul(A.int(), B.int().T))


_register(
    "bitsandbytes::int8_linear_matmul.out",
    "(Tensor A, Tensor B, Tensor! out) -> ()",
    int8_linear_matmul_out_fake,
    int8_linear_matmul_out_cpu,
)
_register(
    "bitsandbytes::int8_vectorwise_quant",
    "(Tensor A, float threshold=0.0) -> (Tensor, Tensor, Tensor?)",
    int8_vectorwise_quant_fake,
    int8_vectorwise_quant_cpu,
)
_register(
    "bitsandbytes::int8_vectorwise_dequant",
    "(Tensor A, Tensor stats) -> Tensor",
    int8_vectorwise_dequant_fake,
    lambda A, stats: A * stats.reshape(-1, 1) * 7.874015718698502e-3,
    key="CompositeExplicitAutograd",
)
_register(
    "bitsandbytes::dequantize_blockwise",
    "(Tensor A, Tensor absmax, Tensor code, int blocksize, ScalarType dtype) -> Tensor",
    dequantize_blockwise_fake,
    dequantize_blockwise_cpu,
)

# -- diffusers and flash-attention: attention forwards --------------------------------


def _attention(q: Tensor, k: Tensor, v: Tensor, scale: float) -> tuple[Tensor, Tensor]:
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * scale
    lse = torch.logsumexp(scores, dim=-1)
    out = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v)
    return out.contiguous(), lse.float()


def fa3_forward_fake(q: Tensor, k: Tensor, v: Tensor, softmax_scale: Any = None) -> Any:
    batch_size, seq_len, num_heads, _head_dim = q.shape
    lse_shape = (batch_size, seq_len, num_heads)
    return torch.empty_like(q), q.new_empty(lse_shape)


def fa3_forward_cpu(q: Tensor, k: Tensor, v: Tensor, softmax_scale: Any = None) -> Any:
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    out, lse = _attention(q, k, v, scale)
    return out, lse.permute(0, 2, 1).contiguous()


def round_multiple(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def flash_attn_forward_fake(
    q: Tensor, k: Tensor, v: Tensor, softmax_scale: float, return_softmax: bool
) -> Any:
    batch_size, seqlen_q, num_heads, _head_size = q.shape
    seqlen_k = k.shape[1]
    out = torch.empty_like(q)
    softmax_lse = torch.empty(
        (batch_size, num_heads, seqlen_q), dtype=torch.float32, device=q.device, layout=q.layout
    )
    p = torch.empty((0,), dtype=q.dtype, device=q.device, layout=q.layout)
    if return_softmax:
        p = torch.empty(
            (batch_size, num_heads, round_multiple(seqlen_q, 128), round_multiple(seqlen_k, 128)),
            dtype=q.dtype,
            device=q.device,
            layout=q.layout,
        )
    rng_state = torch.empty((2,), dtype=torch.int64, device=q.device)
    return out, softmax_lse, p, rng_state


def flash_attn_forward_cpu(
    q: Tensor, k: Tensor, v: Tensor, softmax_scale: float, return_softmax: bool
) -> Any:
    out, lse = _attention(q, k, v, softmax_scale)
    return out, lse, torch.empty((0,), dtype=q.dtype), torch.zeros(2, dtype=torch.int64)


_register(
    "_diffusers_flash_attn_3::_flash_attn_forward",
    "(Tensor q, Tensor k, Tensor v, float? softmax_scale=None) -> (Tensor, Tensor)",
    fa3_forward_fake,
    fa3_forward_cpu,
)
_register(
    "flash_attn::_flash_attn_forward",
    "(Tensor q, Tensor k, Tensor v, float softmax_scale, bool return_softmax) "
    "-> (Tensor, Tensor, Tensor, Tensor)",
    flash_attn_forward_fake,
    flash_attn_forward_cpu,
)

# -- torchao: an op, a composite of it, a cast ---------------------------------------------


def int_scaled_mm_fake(a: Tensor, b: Tensor, scales: Tensor, splitK: int = 1) -> Tensor:
    torch._check(len(a.shape) == 2, lambda: f"a should be a 2d tensor. Got {len(a.shape)} dims")
    return a.new_empty((a.shape[0], b.shape[1]), dtype=torch.float32)


_register(
    "torchao::int_scaled_mm",
    "(Tensor a, Tensor b, Tensor scales, int splitK) -> Tensor",
    int_scaled_mm_fake,
    lambda a, b, scales, splitK: (a.int() @ b.int()) * scales,
)
_register(
    "torchao::cast",
    "(Tensor x, ScalarType dtype) -> Tensor",
    lambda x, dtype: torch.empty_like(x, dtype=dtype),
    lambda x, dtype: x.to(dtype),
)
customop.define(
    "torchao::int_scaled_matmul",
    "(Tensor a, Tensor b, Tensor scales, ScalarType out_dtype) -> Tensor",
    dispatcher=d,
)
customop.impl(
    "torchao::int_scaled_matmul",
    "CompositeImplicitAutograd",
    lambda a, b, scales, out_dtype: ops.torchao.cast(
        ops.torchao.int_scaled_mm(a, b, scales, 1), out_dtype
    ),
    dispatcher=d,
)

# -- vLLM: a fused activation, and a mutating op returning nothing -------------------------


def silu_and_mul_fake(x: Tensor) -> Tensor:
    d = x.shape[-1] // 2
    return torch.empty((*x.shape[:-1], d), dtype=x.dtype, device=x.device)


def unified_attention_with_output(
    query: Tensor, key: Tensor, value: Tensor, output: Tensor, layer_name: str
) -> None:
    output.copy_((query @ key.T / query.shape[-1] ** 0.5).softmax(-1) @ value)


_register(
    "vllm::silu_and_mul",
    "(Tensor x) -> Tensor",
    silu_and_mul_fake,
    lambda x: torch.nn.functional.silu(x[..., : x.shape[-1] // 2]) * x[..., x.shape[-1] // 2 :],
)
_register(
    "vllm::unified_attention_with_output",
    "(Tensor query, Tensor key, Tensor value, Tensor(a3!) output, str layer_name) -> ()",
    lambda query, key, value, output, layer_name: None,
    unified_attention_with_output,
)

# -- the checks ----------------------------------------------------------------------------

g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(1, 5, 2, 4, generator=g) for _ in range(3))
A8 = torch.randint(-127, 128, (3, 4), dtype=torch.int8, generator=g)
B8 = torch.randint(-127, 128, (5, 4), dtype=torch.int8, generator=g)
a8 = torch.randint(-8, 8, (3, 4), dtype=torch.int8, generator=g)
b8 = torch.randint(-8, 8, (4, 2), dtype=torch.int8, generator=g)
SCALES = torch.tensor([[0.5, 2.0]])
PACKED = torch.randint(0, 4, (2, 8), dtype=torch.uint8, generator=g)
QUERY = torch.randn(3, 4, generator=g)
OUT = torch.empty(3, 4)

CALLS = [
    pytest.param(lambda: ops.bitsandbytes.int8_linear_matmul.default, (A8, B8), id="bnb-matmul"),
    pytest.param(
        lambda: ops.bitsandbytes.int8_linear_matmul.out,
        (A8, B8, torch.empty(3, 5, dtype=torch.int32)),
        id="bnb-matmul-out",
    ),
    pytest.param(
        lambda: ops.bitsandbytes.int8_vectorwise_quant.default,
        (torch.randn(4, 6, generator=g),),
        id="bnb-quant",
    ),
    pytest.param(
        lambda: ops.bitsandbytes.int8_vectorwise_quant.default,
        (torch.tensor([[0.5, 9.0, 0.1], [0.2, -8.0, 0.3]]), 6.0),
        id="bnb-quant-outliers",
    ),
    pytest.param(
        lambda: ops.bitsandbytes.int8_vectorwise_dequant.default,
        (A8, torch.rand(3, generator=g)),
        id="bnb-dequant",
    ),
    pytest.param(
        lambda: ops.bitsandbytes.dequantize_blockwise.default,
        (PACKED, torch.rand(4, generator=g), torch.linspace(-1, 1, 4), 4, torch.float16),
        id="bnb-blockwise",
    ),
    pytest.param(
        lambda: ops._diffusers_flash_attn_3._flash_attn_forward.default, (q, k, v), id="fa3"
    ),
    pytest.param(
        lambda: ops.flash_attn._flash_attn_forward.default, (q, k, v, 0.5, False), id="flash-attn"
    ),
    pytest.param(
        lambda: ops.torchao.int_scaled_mm.default, (a8, b8, SCALES, 1), id="torchao-scaled-mm"
    ),
    pytest.param(
        lambda: ops.torchao.int_scaled_matmul.default,
        (a8, b8, SCALES, torch.bfloat16),
        id="torchao-composite",
    ),
    pytest.param(lambda: ops.torchao.cast.default, (SCALES, torch.float16), id="torchao-cast"),
    pytest.param(
        lambda: ops.vllm.silu_and_mul.default, (torch.randn(3, 8, generator=g),), id="vllm-silu"
    ),
    pytest.param(
        lambda: ops.vllm.unified_attention_with_output.default,
        (QUERY, torch.randn(5, 4, generator=g), torch.randn(5, 4, generator=g), OUT, "layer.0"),
        id="vllm-attention",
    ),
]


# bitsandbytes' fake calls torch._check_is_size, which torch 2.13 deprecates (its warning).
@pytest.mark.filterwarnings("ignore:_check_is_size will be removed:FutureWarning")
@pytest.mark.parametrize(("op", "args"), CALLS)
def test_opcheck_passes_the_original_torch_fake_on_torch_tensors(op: Any, args: Any) -> None:
    assert customop.opcheck(op(), args) == dict.fromkeys(TORCH_CHECKS, "SUCCESS")


def test_a_torch_fake_with_the_wrong_dtype_is_caught() -> None:
    with customop.Library("wrongdtype", "FRAGMENT", dispatcher=d) as lib:
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", lambda x: x.double(), "CPU")
        lib.register_fake("f", lambda x: torch.empty_like(x))
        with pytest.raises(customop.OpCheckError, match=r"Dtypes torch\.float64 and float32"):
            customop.opcheck(ops.wrongdtype.f.default, (torch.randn(3),))

"""diffusers' registrations (``diffusers/models/attention_dispatch.py``), ported.

diffusers wraps attention kernels in ``custom_op`` ops (so ``torch.compile``
sees them whole) and registers the fake impl by name, with a function that
takes the op's parameters without annotations::

    _custom_op = torch.library.custom_op
    _register_fake = torch.library.register_fake

    @_custom_op("_diffusers_flash_attn_3::_flash_attn_forward", mutates_args=(),
                device_types="cuda")
    def _wrapped_flash_attn_3(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                              softmax_scale: Optional[float] = None, causal: bool = False, ...
                              ) -> Tuple[torch.Tensor, torch.Tensor]: ...

    @_register_fake("_diffusers_flash_attn_3::_flash_attn_forward")
    def _(q, k, v, softmax_scale=None, causal=False, ...):
        batch_size, seq_len, num_heads, head_dim = q.shape
        lse_shape = (batch_size, seq_len, num_heads)
        return torch.empty_like(q), q.new_empty(lse_shape)

The port renames ``torch.library`` to ``customop`` and runs on the CPU with a
numpy kernel (ours).
"""

# The ported code keeps the originals' names and signatures (A, B, splitK, many
# positional parameters), so that it reads as the code it restates.
# ruff: noqa: PLR0917

from __future__ import annotations

from typing import Any

import numpy as np

import customop
from customop import Tensor
from tests.ports._attention import attention
from tests.ports._harness import run_every_way

_custom_op = customop.custom_op
_register_fake = customop.register_fake


@_custom_op("_diffusers_flash_attn_3::_flash_attn_forward", mutates_args=(), device_types="cpu")
def _wrapped_flash_attn_3(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    softmax_scale: float | None = None,
    causal: bool = False,
    qv: Tensor | None = None,
    q_descale: Tensor | None = None,
    k_descale: Tensor | None = None,
    v_descale: Tensor | None = None,
    attention_chunk: int = 0,
    softcap: float = 0.0,
    num_splits: int = 1,
    pack_gqa: bool | None = None,
    deterministic: bool = False,
    sm_margin: int = 0,
) -> tuple[Tensor, Tensor]:
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    out, lse = attention(q, k, v, scale, causal)
    lse = lse.transpose(0, 2, 1)  # the original's lse.permute(0, 2, 1)
    return out, np.ascontiguousarray(lse)


@_register_fake("_diffusers_flash_attn_3::_flash_attn_forward")
def _(
    q,
    k,
    v,
    softmax_scale=None,
    causal=False,
    qv=None,
    q_descale=None,
    k_descale=None,
    v_descale=None,
    attention_chunk=0,
    softcap=0.0,
    num_splits=1,
    pack_gqa=None,
    deterministic=False,
    sm_margin=0,
) -> Any:
    # A lot of the parameters here are not yet used (the original's comment).
    batch_size, seq_len, num_heads, _head_dim = q.shape
    lse_shape = (batch_size, seq_len, num_heads)
    return customop.empty_like(q), customop.new_empty(q, lse_shape, dtype=customop.float32)


rng = np.random.default_rng(4)


def test_the_wrapped_op_runs_every_way_with_defaults() -> None:
    q, k, v = (rng.standard_normal((2, 3, 2, 4)).astype(np.float32) for _ in range(3))
    out, lse = run_every_way(_wrapped_flash_attn_3, (q, k, v))
    expected_out, expected_lse = attention(q, k, v, 0.5, causal=False)
    np.testing.assert_array_equal(out, expected_out)
    np.testing.assert_array_equal(lse, expected_lse.transpose(0, 2, 1))


def test_keyword_arguments_run_every_way() -> None:
    q, k, v = (rng.standard_normal((1, 4, 1, 2)).astype(np.float32) for _ in range(3))
    out, _ = run_every_way(_wrapped_flash_attn_3, (q, k, v), softmax_scale=1.0, causal=True)
    np.testing.assert_array_equal(out, attention(q, k, v, 1.0, causal=True)[0])


def test_the_unannotated_fake_is_the_registered_function() -> None:
    entry = customop.dispatcher.table_entry("_diffusers_flash_attn_3::_flash_attn_forward", "Fake")
    assert entry.kernel == "_"
    assert customop.handle_of(_).source == entry.source

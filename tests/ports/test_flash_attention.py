"""flash-attention's registrations (``flash_attn/flash_attn_interface.py``), ported.

The original aliases torch's functions, defines the forward with
``custom_op`` for CUDA, registers its fake impl by name with the free
``register_fake`` decorator, and calls the op through ``torch.ops``::

    _torch_custom_op_wrapper = torch.library.custom_op
    _torch_register_fake_wrapper = torch.library.register_fake

    @_torch_custom_op_wrapper("flash_attn::_flash_attn_forward", mutates_args=(),
                              device_types="cuda")
    def _flash_attn_forward(q, k, v, dropout_p: float, ...) -> Tuple[Tensor, ...]: ...

    @_torch_register_fake_wrapper("flash_attn::_flash_attn_forward")
    def _flash_attn_forward_fake(q, k, v, dropout_p, ...): ...

    _wrapped_flash_attn_forward = torch.ops.flash_attn._flash_attn_forward

The port renames ``torch.library`` to ``customop`` and runs on the CPU with a
numpy kernel (ours).
"""

# The ported code keeps the originals' names and signatures (A, B, splitK, many
# positional parameters), so that it reads as the code it restates.
# ruff: noqa: N806, PLR0917

from __future__ import annotations

import numpy as np

import customop
from customop import Tensor
from tests.ports._attention import attention
from tests.ports._harness import run_every_way

_torch_custom_op_wrapper = customop.custom_op
_torch_register_fake_wrapper = customop.register_fake


def round_multiple(x: int, m: int) -> int:
    return (x + m - 1) // m * m


@_torch_custom_op_wrapper("flash_attn::_flash_attn_forward", mutates_args=(), device_types="cpu")
def _flash_attn_forward(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    dropout_p: float,
    softmax_scale: float,
    causal: bool,
    window_size_left: int,
    window_size_right: int,
    softcap: float,
    alibi_slopes: Tensor | None,
    return_softmax: bool,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    out, softmax_lse = attention(q, k, v, softmax_scale, causal)
    S_dmask = np.empty((0,), dtype=q.dtype)
    rng_state = np.zeros((2,), dtype=np.int64)
    return out, softmax_lse, S_dmask, rng_state


@_torch_register_fake_wrapper("flash_attn::_flash_attn_forward")
def _flash_attn_forward_fake(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    dropout_p: float,
    softmax_scale: float,
    causal: bool,
    window_size_left: int,
    window_size_right: int,
    softcap: float,
    alibi_slopes: Tensor | None,
    return_softmax: bool,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    batch_size, seqlen_q, num_heads, _head_size = q.shape
    seqlen_k = k.shape[1]
    out = customop.empty_like(q)
    softmax_lse = customop.empty(
        (batch_size, num_heads, seqlen_q), dtype=customop.float32, device=q.device
    )
    p = customop.empty((0,), dtype=q.dtype, device=q.device)
    if return_softmax:
        shape = (
            batch_size,
            num_heads,
            round_multiple(seqlen_q, 128),
            round_multiple(seqlen_k, 128),
        )
        p = customop.empty(shape, dtype=q.dtype, device=q.device)
    rng_state = customop.empty((2,), dtype=customop.int64, device=q.device)
    return out, softmax_lse, p, rng_state


_wrapped_flash_attn_forward = customop.ops.flash_attn._flash_attn_forward

rng = np.random.default_rng(2)


def _inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q, k, v = (rng.standard_normal((1, 5, 2, 4)).astype(np.float32) for _ in range(3))
    return q, k, v


def test_the_decorated_fake_is_still_the_function() -> None:
    q, k, v = _inputs()
    with customop.FakeTensorMode() as mode:
        fakes = [mode.from_real(a) for a in (q, k, v)]
        _out, lse, p, _rng_state = _flash_attn_forward_fake(
            *fakes, 0.0, 0.5, True, -1, -1, 0.0, None, True
        )
    assert tuple(p.shape) == (1, 2, 128, 128)
    assert tuple(lse.shape) == (1, 2, 5)
    assert customop.handle_of(_flash_attn_forward_fake).source.startswith(
        "test_flash_attention.py:"
    )


def test_forward_runs_every_way_through_torch_ops_spelling() -> None:
    q, k, v = _inputs()
    args = (q, k, v, 0.0, 0.5, True, -1, -1, 0.0, None, False)
    out, lse, s_dmask, rng_state = run_every_way(_wrapped_flash_attn_forward.default, args)
    expected_out, expected_lse = attention(q, k, v, 0.5, causal=True)
    np.testing.assert_array_equal(out, expected_out)
    np.testing.assert_array_equal(lse, expected_lse)
    assert s_dmask.shape == (0,)
    assert rng_state.dtype == np.int64


def test_the_custom_op_object_runs_every_way() -> None:
    q, k, v = _inputs()
    args = (q, k, v, 0.0, 0.25, False, -1, -1, 0.0, None, False)
    out = run_every_way(_flash_attn_forward, args)
    np.testing.assert_array_equal(out[0], attention(q, k, v, 0.25, causal=False)[0])

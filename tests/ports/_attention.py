"""A numpy reference attention, the stand-in for the CUDA kernels the ported ops wrap."""

from __future__ import annotations

import numpy as np


def attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, causal: bool
) -> tuple[np.ndarray, np.ndarray]:
    """``(out, lse)`` for ``(batch, seq, heads, dim)`` inputs; lse is ``(batch, heads, seq_q)``."""
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) * scale
    if causal:
        seq_q, seq_k = scores.shape[-2:]
        scores = np.where(np.tril(np.ones((seq_q, seq_k), dtype=bool)), scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores - top)
    total = weights.sum(axis=-1, keepdims=True)
    out = np.einsum("bhqk,bkhd->bqhd", weights / total, v).astype(q.dtype)
    lse = (np.log(total) + top)[..., 0].astype(np.float32)
    return out, lse

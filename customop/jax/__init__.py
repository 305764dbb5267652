"""JAX arrays as a customop backend: every op a JAX primitive under jit, grad and vmap.

``import customop.jax`` makes JAX arrays and tracers tensors of
``customop.dispatcher`` (``install`` does it for other dispatchers): calling
any customop op with them binds `PRIMITIVE`, whose shapes come from the op's
fake impl, whose code is the op's ``"jax"`` kernel (inline) or its numpy CPU
kernel (through ``jax.pure_callback``), whose VJP is the op's autograd
formula and whose batching rule is the op's vmap rule. See ``docs/jax.md``.

This package imports jax (at module level: it is only ever imported on
purpose); ``import customop`` never imports it.
"""

from customop.jax._install import BACKEND
from customop.jax._install import KEY
from customop.jax._install import describe
from customop.jax._install import install
from customop.jax._primitive import PRIMITIVE

__all__ = [
    "BACKEND",
    "KEY",
    "PRIMITIVE",
    "describe",
    "install",
]

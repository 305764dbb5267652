"""customop ops as real torch ops: ``torch.library``, ``torch.compile``, ``torch.export``.

``customop.torch.register(op)`` defines a customop op in ``torch.library``
with the same schema and registers its kernels, fake impl, autograd formula
and tags there; customop's own call objects then route calls under Dynamo to
``torch.ops``, and run the kernel directly on plain torch tensors in eager
mode. See ``docs/torch.md``.

This package imports torch (at module level: it is only ever imported on
purpose); ``import customop`` never imports it.
"""

from customop.torch import _opcheck as _opcheck  # torch.library.opcheck takes customop ops
from customop.torch._register import register

__all__ = ["register"]

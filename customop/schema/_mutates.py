"""`MutatesArgs`: the values of ``mutates_args`` that are not parameter names.

Its own module so that ``@custom_op``'s options can name it without loading
`customop.schema._infer`, which ``import customop`` leaves for the first
inference (issue #12).
"""

from __future__ import annotations

import enum

__all__ = ["MutatesArgs"]


class MutatesArgs(enum.Enum):
    """Values of ``mutates_args`` that are not a collection of parameter names."""

    #: The function may mutate any of its tensor arguments. As torch does for
    #: its "unknown", every argument that carries tensors (Tensor, Tensor?,
    #: Tensor[], Tensor?[], Tensor[]?) gets its own write alias ``Tensor(a<i>!)``,
    #: ``i`` being its position; other arguments stay as they are.
    UNKNOWN = "unknown"

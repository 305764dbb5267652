"""Symbolic sizes: `SymInt`, `SymBool`, the `ShapeEnv` they live in, and their algebra.

Fake impls get unknown sizes from ``get_ctx().new_dynamic_size()``; shape code
computes with them as with ints (``customop.tensor`` re-exports the public names).
"""

from customop.symbolic._symbool import SymBool
from customop.symbolic._symint import DataDependentError
from customop.symbolic._symint import ShapeEnv
from customop.symbolic._symint import SymInt
from customop.symbolic._symint import sym_max
from customop.symbolic._symint import sym_min

# Internal API: the names sibling packages may import from this one's private
# modules (tests/test_layers.py checks every import against this list).
from customop.symbolic._ops import bounds as bounds
from customop.symbolic._symint import TORCH_FUNCTION as TORCH_FUNCTION
from customop.symbolic._symint import IntLike as IntLike
from customop.symbolic._symint import as_int as as_int
from customop.symbolic._symint import torch_function_hook as torch_function_hook

__internal__ = (
    "IntLike",
    "TORCH_FUNCTION",
    "as_int",
    "torch_function_hook",
    "bounds",
)

__all__ = [
    "DataDependentError",
    "ShapeEnv",
    "SymBool",
    "SymInt",
    "sym_max",
    "sym_min",
]

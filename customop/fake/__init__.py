"""Fake tensors in action: `FakeTensorMode`, `get_ctx`, `opcheck` and `debug_checks`."""

from customop.fake._debug import DebugCheckError
from customop.fake._debug import debug_checks
from customop.fake._mode import FakeTensorMode
from customop.fake._opcheck import opcheck
from customop.tensor import FakeImplCtx
from customop.tensor import get_ctx

# Internal API: the names sibling packages may import from this one's private
# modules (tests/test_layers.py checks every import against this list).
from customop.fake._aliasing import as_numpy as as_numpy
from customop.fake._opcheck import CheckOptions as CheckOptions
from customop.fake._opcheck import GRAD_CHECKS as GRAD_CHECKS
from customop.fake._opcheck_meta import check_failed as check_failed

__internal__ = (
    "CheckOptions",
    "GRAD_CHECKS",
    "as_numpy",
    "check_failed",
)

__all__ = [
    "DebugCheckError",
    "FakeImplCtx",
    "FakeTensorMode",
    "debug_checks",
    "get_ctx",
    "opcheck",
]

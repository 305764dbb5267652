"""Fake tensors in action: `FakeTensorMode`, `get_ctx`, and `opcheck`."""

from customop.fake._mode import FakeTensorMode
from customop.fake._opcheck import opcheck
from customop.tensor._ctx import FakeImplCtx
from customop.tensor._ctx import get_ctx

__all__ = [
    "FakeImplCtx",
    "FakeTensorMode",
    "get_ctx",
    "opcheck",
]

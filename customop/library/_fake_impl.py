"""Marking fake impls so that ``get_ctx()`` knows it is called from one.

NOTE: no per-call wrapper. A wrapper that set a context variable around every
fake impl call cost about 0.4 µs, most of the fake-mode call budget (1 µs).
Instead the fake impl's code object is recorded at registration, and
``get_ctx()`` (rare) looks for it among its callers' frames.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from customop.tensor._ctx import FAKE_IMPL_CODES

__all__ = ["remember_fake_impl"]


def remember_fake_impl(fn: Callable[..., Any], op: str) -> Callable[..., Any]:
    """Record ``fn`` as the fake impl of ``op`` (for ``get_ctx``); returns ``fn`` itself."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is not None:
        FAKE_IMPL_CODES[code] = op
    return fn

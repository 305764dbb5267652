"""Wrapping fake impls so that ``get_ctx()`` works while they run."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from customop.tensor._ctx import FAKE_IMPL_CTX

__all__ = ["with_fake_ctx"]

_set = FAKE_IMPL_CTX.set
_reset = FAKE_IMPL_CTX.reset


def with_fake_ctx(fn: Callable[..., Any], op: str) -> Callable[..., Any]:
    """``fn`` running with a `FakeImplCtx` whose sizes come from the active mode's ShapeEnv."""

    # Only the op's name is set per call (one ContextVar store); `get_ctx()`
    # builds the context, with the active mode's ShapeEnv, if the impl asks.
    @wraps(fn)
    def fake_impl(*args: Any, **kwargs: Any) -> Any:
        token = _set(op)
        try:
            return fn(*args, **kwargs)
        finally:
            _reset(token)

    return fake_impl

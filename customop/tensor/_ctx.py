"""The context a fake impl runs in: ``get_ctx()`` and dynamic sizes.

``register_fake`` records each fake impl's code object in `FAKE_IMPL_CODES`;
``get_ctx()`` looks for one among its callers' frames, so a fake impl call
costs nothing extra, and ``get_ctx()`` outside one is an error, as in torch.
"""

from __future__ import annotations

import sys
import warnings
import weakref
from types import CodeType, FrameType
from typing import Final, final

from customop.dispatch import user_stacklevel
from customop.symbolic import ShapeEnv, SymInt
from customop.tensor._factory import CURRENT_FAKE_MODE

__all__ = [
    "DEFAULT_SHAPE_ENV",
    "FAKE_IMPL_CODES",
    "FakeImplCtx",
    "get_ctx",
    "in_fake_impl",
    "running_fake_impl",
]

#: Where sizes come from when no fake mode (with its own ShapeEnv) is active.
DEFAULT_SHAPE_ENV: Final = ShapeEnv()


@final
class FakeImplCtx:
    """What a running fake impl may ask for: data-dependent output sizes."""

    __slots__ = ("op", "shape_env")

    def __init__(self, shape_env: ShapeEnv, op: str) -> None:
        self.shape_env = shape_env
        self.op = op

    def new_dynamic_size(self, *, min: int = 0, max: int | None = None) -> SymInt:
        """A new size symbol ``s<n>`` in ``[min, max]``, for an output whose size
        depends on the data (``nonzero``, ``unique``): the fake cannot know it.

        Args:
            min: the smallest value the size can take.
            max: the largest value, or None for no upper bound.

        Returns:
            The new `SymInt`.
        """
        return self.shape_env.new_symint(min, max)

    def create_unbacked_symint(self, *, min: int = 0, max: int | None = None) -> SymInt:
        """Deprecated alias of `new_dynamic_size` (torch's old name); warns.

        Args:
            min: the smallest value the size can take.
            max: the largest value, or None for no upper bound.

        Returns:
            The new `SymInt`, as `new_dynamic_size` makes it.

        Warns:
            DeprecationWarning: on every call, pointing at the caller's line.
        """
        warnings.warn(
            "FakeImplCtx.create_unbacked_symint is deprecated, as in torch. It is another name "
            "for new_dynamic_size. Call get_ctx().new_dynamic_size() instead.",
            DeprecationWarning,
            stacklevel=user_stacklevel(),
        )
        return self.new_dynamic_size(min=min, max=max)

    def __repr__(self) -> str:
        return f"<FakeImplCtx of {self.op}>"


#: Code objects of registered fake impls -> the op each serves (weak: impls may go).
FAKE_IMPL_CODES: Final[weakref.WeakKeyDictionary[CodeType, str]] = weakref.WeakKeyDictionary()
_MAX_DEPTH: Final = 32


def running_fake_impl() -> str | None:
    """The op whose fake impl is running (a caller of the caller of this), or None."""
    return _running_fake_impl(3)


def in_fake_impl() -> bool:
    """Whether a registered fake impl is among the callers (a few frames up)."""
    return _running_fake_impl(3) is not None


def _running_fake_impl(depth: int = 2) -> str | None:
    frame: FrameType | None = sys._getframe(depth)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return None
        op = FAKE_IMPL_CODES.get(frame.f_code)
        if op is not None:
            return op
        frame = frame.f_back
    return None


def get_ctx() -> FakeImplCtx:
    """The context of the running fake impl; an error anywhere else.

    Returns:
        The `FakeImplCtx` of the fake impl that is running.

    Raises:
        RuntimeError: no fake impl is running.
    """
    op = running_fake_impl()
    if op is None:
        raise RuntimeError(
            "get_ctx: no fake impl is running. get_ctx() gives a fake impl its context "
            "(new_dynamic_size for data-dependent sizes), so it only works inside one. "
            "Call it from the function you registered with register_fake."
        )
    mode = CURRENT_FAKE_MODE.get()
    shape_env = getattr(mode, "shape_env", None)
    return FakeImplCtx(shape_env if isinstance(shape_env, ShapeEnv) else DEFAULT_SHAPE_ENV, op)

"""``check`` and ``check_is_size``: torch's ``_check`` / ``_check_is_size`` for customop.

A fake impl states what it requires of its inputs' sizes:

* on decided conditions (bools, and SymBools the facts settle), a False one
  raises `CheckError` with the message;
* on an undecided `SymBool` (``s0 == s1`` of two data-dependent sizes), the
  condition is *assumed*: recorded in the ShapeEnv of its symbols, so later
  comparisons use it, and in the running trace (`ASSUMPTION_SINK`), so the
  graph checks it on every run. Nothing is raised.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Final, NoReturn

from customop.exceptions import CheckError
from customop.symbolic import IntLike, SymBool, SymInt, as_int

__all__ = ["ASSUMPTION_SINK", "CheckError", "assumptions_about", "check", "check_is_size"]

#: Where the running trace collects the assumptions made while it records (or None).
ASSUMPTION_SINK: Final[ContextVar[list[str] | None]] = ContextVar(
    "customop.tensor.assumption_sink", default=None
)

Message = str | Callable[[], str] | None


def check(cond: bool | SymBool, msg: Message = None) -> None:
    """Require ``cond``: raise `CheckError` when it is False, assume it when undecided.

    Args:
        cond: a bool, or a `SymBool` from comparing sizes (``x.shape[0] == y.shape[0]``).
        msg: the error message, or a zero-argument callable that makes it (called
            only on failure, as in ``torch._check``).

    Raises:
        CheckError: ``cond`` is False (or the recorded facts prove it False).
        TypeError: ``cond`` is not a bool or a SymBool.
    """
    if cond is True:
        return
    if isinstance(cond, SymBool):
        decided = cond.decided
        if decided is None:
            assumed = cond._record()
            sink = ASSUMPTION_SINK.get()
            if sink is not None:
                sink.extend(text for text in assumed if text not in sink)
            return
        if decided:
            return
        _fail(msg, str(cond))
    if cond is False or _is_numpy_bool(cond):
        if not cond:
            _fail(msg, "")
        return
    raise TypeError(
        f"check: cond must be a bool or a SymBool, got {type(cond).__qualname__} {cond!r:.60}. "
        "A check states a condition, and an int or array has no single truth. Pass a "
        "comparison, such as x.shape[0] == y.shape[0]."
    )


def check_is_size(n: IntLike, msg: Message = None, *, max: int | None = None) -> None:
    """Require ``n`` to be a valid size: ``n >= 0`` (and ``n <= max`` when given).

    On a `SymInt` the bounds are assumed (see `check`), as ``torch._check_is_size``.

    Args:
        n: the size, an int or a `SymInt`.
        msg: the error message, or a zero-argument callable that makes it.
        max: an upper bound, when the op has one.

    Raises:
        CheckError: ``n`` is negative (or above ``max``).
        TypeError: ``n`` is not an int or a SymInt.
    """
    if not isinstance(n, SymInt) and as_int(n) is None:
        raise TypeError(
            f"check_is_size: n must be an int or a SymInt, got {type(n).__qualname__} "
            f"{n!r:.60}. A size is an integer. Pass a size, such as x.shape[0]."
        )
    for cond, text in ((n >= 0, f"{n} >= 0"), (True if max is None else n <= max, f"{n} <= {max}")):
        if cond is False and msg is None:
            raise CheckError(
                f"check_is_size: {text} is False. A size is at least 0 (and at most max=, when "
                "given), so these inputs do not fit the op. Pass a valid size."
            )
        check(cond, msg)


def assumptions_about(sizes: Iterable[object]) -> list[str]:
    """Every assumption recorded in the ShapeEnvs of the symbols in ``sizes``, oldest first.

    A trace adds these to its graph: a check that they decided (so recorded
    nothing new) still relied on them.
    """
    found: dict[str, None] = {}
    for size in sizes:
        if isinstance(size, SymInt):
            for symbol in sorted(size._expr.symbols(), key=lambda s: s.index):
                if symbol.facts is not None:
                    found.update(dict.fromkeys(symbol.facts.recorded))
    return list(found)


def _is_numpy_bool(value: object) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.bool_)


def _fail(msg: Message, text: str) -> NoReturn:
    if msg is not None:
        raise CheckError(msg() if callable(msg) else msg)
    shown = f" {text}" if text else ""
    raise CheckError(
        f"check: the condition{shown} is False. A fake impl or kernel requires it "
        "(customop.check), so these inputs do not fit the op. Pass inputs that satisfy it, "
        "or give check a msg= that says what the op needs."
    )

"""What a `ShapeEnv` knows about its symbols beyond their ranges: recorded assumptions.

``customop.check(s0 == s1)`` and ``check_is_size`` record facts here, and
later comparisons of the env's symbols consult them. Every fact is kept in a
normal form over integers:

* ``e == 0``: when ``e`` has a symbol with coefficient +-1 that appears
  nowhere else, the newest such symbol is *substituted* (``s1 -> s0``)
  everywhere: in later queries, in the other facts, and in the substituted
  symbol's range, which becomes two ``>=`` facts. Otherwise ``e >= 0`` and
  ``-e >= 0``.
* ``e >= 0`` (``a < b`` is ``b - a - 1 >= 0``: sizes are integers).
* ``e != 0``.

A query ``e >= 0`` is True when some fact ``f >= 0`` leaves ``e - f`` with a
range at or above 0, and False when ``e + f`` lies below 0: one fact at a
time, sound, not complete (as `bounds` is).
"""

from __future__ import annotations

import math
import threading
from typing import Final, Literal, TypeAlias, final

from customop.symbolic._expr import Expr, Symbol
from customop.symbolic._ops import bounds, substitute

__all__ = ["Facts", "Kind", "normal_forms"]

#: A normal form's relation to 0.
Kind: TypeAlias = Literal[">=", "==", "!="]

#: ``left <op> right`` as normal forms ``(e, kind)``: ``e <kind> 0``, all of which hold.
_SHIFT: Final[dict[str, tuple[int, int, Kind]]] = {
    # op: (sign of left - right, constant added, kind)
    ">=": (1, 0, ">="),
    ">": (1, -1, ">="),
    "<=": (-1, 0, ">="),
    "<": (-1, -1, ">="),
    "==": (1, 0, "=="),
    "!=": (1, 0, "!="),
}


def normal_forms(left: Expr, op: str, right: Expr) -> tuple[Expr, Kind]:
    """``left <op> right`` as ``(e, kind)`` meaning ``e <kind> 0``."""
    sign, shift, kind = _SHIFT[op]
    return (left - right).scale(sign) + Expr.const(shift), kind


def _reduced(expr: Expr) -> Expr | None:
    """``expr == 0`` divided by its coefficients' gcd; None when it has no integer solution."""
    divisor = 0
    for mono, coef in expr.terms:
        if mono:
            divisor = math.gcd(divisor, coef)
    if divisor <= 1:
        return expr
    if expr.constant % divisor:
        return None
    return Expr({mono: coef // divisor for mono, coef in expr.terms})


def _solvable(expr: Expr) -> tuple[Symbol, int] | None:
    """The newest symbol with coefficient +-1 that occurs once in ``expr``, and its sign."""
    best: tuple[Symbol, int] | None = None
    for mono, coef in expr.terms:
        if len(mono) != 1 or mono[0][1] != 1 or abs(coef) != 1:
            continue
        atom = mono[0][0]
        if not isinstance(atom, Symbol) or (best is not None and best[0].index > atom.index):
            continue
        rest = expr - Expr.atom(atom).scale(coef)
        if atom not in rest.symbols():
            best = (atom, coef)
    return best


@final
class Facts:
    """The recorded assumptions of one `ShapeEnv`. Thread-safe."""

    __slots__ = ("_lock", "at_least", "not_zero", "recorded", "subs")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.subs: dict[Symbol, Expr] = {}
        self.at_least: list[Expr] = []  # each >= 0
        self.not_zero: list[Expr] = []  # each != 0
        self.recorded: list[str] = []  # the assumptions as written, oldest first

    def decide(self, expr: Expr, kind: Kind) -> bool | None:
        """Whether ``expr <kind> 0`` follows from the facts (None: it does not, either way)."""
        expr = substitute(expr, self.subs)
        if kind == ">=":
            return self._at_least_zero(expr)
        equal = self._zero(expr)
        return equal if kind == "==" or equal is None else not equal

    def _zero(self, expr: Expr) -> bool | None:
        reduced = _reduced(expr)
        if reduced is None:
            return False
        if reduced.is_constant:
            return reduced.constant == 0
        if any(f in (reduced, -reduced) for f in self.not_zero):
            return False
        above, below = self._at_least_zero(reduced), self._at_least_zero(-reduced)
        if above is False or below is False:
            return False
        return True if above and below else None

    def _at_least_zero(self, expr: Expr) -> bool | None:
        if expr.is_constant:
            return expr.constant >= 0
        lo, hi = bounds(expr)
        if lo >= 0:
            return True
        if hi < 0:
            return False
        for fact in self.at_least:
            if bounds(expr - fact)[0] >= 0:
                return True
            if bounds(expr + fact)[1] < 0:
                return False
        return None

    def record(self, expr: Expr, kind: Kind, text: str) -> None:
        """Assume ``expr <kind> 0`` from now on (``text`` is how the user wrote it)."""
        with self._lock:
            if text not in self.recorded:
                self.recorded.append(text)
            expr = substitute(expr, self.subs)
            if kind == ">=":
                self.at_least.append(expr)
            elif kind == "!=":
                self.not_zero.append(_reduced(expr) or expr)
            else:
                self._record_zero(expr)

    def _record_zero(self, expr: Expr) -> None:
        reduced = _reduced(expr) or expr
        found = _solvable(reduced)
        if found is None:
            self.at_least += [reduced, -reduced]
            return
        symbol, coef = found
        # reduced = coef*symbol + rest == 0, so symbol == -coef*rest (coef is +-1).
        value = (reduced - Expr.atom(symbol).scale(coef)).scale(-coef)
        step = {symbol: value}
        self.subs = {s: substitute(e, step) for s, e in self.subs.items()}
        self.subs[symbol] = value
        self.at_least = [substitute(e, step) for e in self.at_least]
        self.not_zero = [substitute(e, step) for e in self.not_zero]
        # The substituted symbol's range now bounds its replacement.
        if not math.isinf(symbol.lo):
            self.at_least.append(value - Expr.const(int(symbol.lo)))
        if not math.isinf(symbol.hi):
            self.at_least.append(Expr.const(int(symbol.hi)) - value)

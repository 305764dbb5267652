"""Floor division, modulo, max / min and value ranges of `Expr` expressions.

Division and modulo by a constant ``c`` are normalised: the multiple of ``c``
in each coefficient moves out (``(2*s0 + 5) // 2`` is ``s0 + 2``), so an atom
that stays keeps coefficients in ``[0, c)``, and one whose range proves it is
already reduced disappears (``s0 % 4`` is ``s0`` when ``s0`` is in ``[0, 3]``).
A symbolic divisor is assumed nonzero (``a // a`` is 1), as it must be for
the division to have happened.

Value ranges are intervals with infinite ends (`INF`), computed by interval
arithmetic: sound, not always tight. They decide the comparisons that the
symbols' bounds settle (``s0 >= 0`` for a size), and nothing more.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Final

from customop.symbolic._expr import INF, Atom, Bound, Expr, Monomial, Symbol, make_func

__all__ = ["bounds", "extremum", "floordiv", "mod", "shifted", "substitute"]


def floordiv(a: Expr, b: Expr) -> Expr:
    """``a // b``, normalised."""
    if b.is_constant:
        return _floordiv_const(a, b.constant)
    if not a.terms:
        return a
    if a == b:
        return Expr.const(1)
    exact = _exact_quotient(a, b)
    return Expr.atom(make_func("//", a, b)) if exact is None else exact


def _exact_quotient(a: Expr, b: Expr) -> Expr | None:
    """``a / b`` when ``b`` is one term that divides every term of ``a`` (``16*s0 / 8*s0``)."""
    if len(b.terms) != 1:
        return None
    divisor, coef = b.terms[0]
    powers = dict(divisor)
    quotient: dict[Monomial, int] = {}
    for mono, value in a.terms:
        left = dict(mono)
        if value % coef or any(left.get(atom, 0) < power for atom, power in powers.items()):
            return None
        rest = tuple((atom, p - powers.get(atom, 0)) for atom, p in mono if p > powers.get(atom, 0))
        quotient[rest] = value // coef
    return Expr(quotient)


def mod(a: Expr, b: Expr) -> Expr:
    """``a % b``, normalised."""
    if b.is_constant:
        return _mod_const(a, b.constant)
    if not a.terms or a == b:
        return Expr.const(0)
    return Expr.atom(make_func("%", a, b))


def extremum(kind: str, a: Expr, b: Expr) -> Expr:
    """``max(a, b)`` or ``min(a, b)`` (``kind``), as an atom when the ranges do not decide it."""
    lo, hi = bounds(a - b)
    if lo >= 0:
        return a if kind == "max" else b
    if hi <= 0:
        return b if kind == "max" else a
    return Expr.atom(make_func(kind, a, b))


def substitute(expr: Expr, subs: Mapping[Symbol, Expr]) -> Expr:
    """``expr`` with each symbol in ``subs`` replaced by its expression, normalised again."""
    if not subs or not (expr.symbols() & subs.keys()):
        return expr
    total = Expr.const(0)
    for mono, coef in expr.terms:
        term = Expr.const(coef)
        for atom, power in mono:
            value = _substitute_atom(atom, subs)
            for _ in range(power):
                term = term * value
        total = total + term
    return total


def _substitute_atom(atom: Atom, subs: Mapping[Symbol, Expr]) -> Expr:
    if isinstance(atom, Symbol):
        found = subs.get(atom)
        return Expr.atom(atom) if found is None else found
    a, b = (substitute(arg, subs) for arg in atom.args)
    if atom.kind == "//":
        return floordiv(a, b)
    return mod(a, b) if atom.kind == "%" else extremum(atom.kind, a, b)


def _split(expr: Expr, divisor: int) -> tuple[Expr, Expr]:
    """``expr`` as ``divisor * quotient + rest``, the rest's coefficients in ``[0, divisor)``."""
    quotient: dict[Monomial, int] = {}
    rest: dict[Monomial, int] = {}
    for mono, coef in expr.terms:
        q, r = divmod(coef, divisor)
        quotient[mono] = q
        rest[mono] = r
    return Expr(quotient), Expr(rest)


def _memo(fn: Callable[[Expr, int], Expr]) -> Callable[[Expr, int], Expr]:
    """Remember results by (expression, divisor): shape code repeats the same divisions."""
    cache: dict[tuple[Expr, int], Expr] = {}

    def remembered(expr: Expr, divisor: int) -> Expr:
        key = (expr, divisor)
        found = cache.get(key)
        if found is None:
            found = fn(expr, divisor)
            if len(cache) >= _MEMO_MAX:
                cache.clear()
            cache[key] = found
        return found

    return remembered


_MEMO_MAX: Final = 4096


@_memo
def _floordiv_const(expr: Expr, divisor: int) -> Expr:
    if divisor == 0:
        raise ZeroDivisionError(f"SymInt: {expr} // 0 divides by zero.")
    if divisor < 0:
        expr, divisor = -expr, -divisor  # floor(a / -c) == floor(-a / c)
    quotient, rest = _split(expr, divisor)
    # floor((c*q + r) / c) == q + floor(r / c) for integer q.
    lo, hi = bounds(rest)
    if lo >= 0 and hi < divisor:
        return quotient
    return quotient + Expr.atom(make_func("//", rest, Expr.const(divisor)))


@_memo
def _mod_const(expr: Expr, divisor: int) -> Expr:
    if divisor == 0:
        raise ZeroDivisionError(f"SymInt: {expr} % 0 divides by zero.")
    if divisor < 0:
        return -_mod_const(-expr, -divisor)  # a % -c == -((-a) % c)
    _, rest = _split(expr, divisor)
    lo, hi = bounds(rest)
    if lo >= 0 and hi < divisor:
        return rest
    return Expr.atom(make_func("%", rest, Expr.const(divisor)))


# -- value ranges ------------------------------------------------------------------------


def _mul(x: Bound, y: Bound) -> Bound:
    # 0 * INF is nan for floats; for interval ends it is 0.
    if x == 0 or y == 0:
        return 0
    if math.isinf(x) or math.isinf(y):
        return INF if (x > 0) == (y > 0) else -INF
    return x * y


def _add(x: Bound, y: Bound) -> Bound:
    # Ends are only added to ends of the same side, so INF + -INF never happens.
    if math.isinf(x):
        return x
    if math.isinf(y):
        return y
    return x + y


def _interval_mul(a: tuple[Bound, Bound], b: tuple[Bound, Bound]) -> tuple[Bound, Bound]:
    corners = [_mul(x, y) for x in a for y in b]
    return min(corners), max(corners)


def _power(interval: tuple[Bound, Bound], n: int) -> tuple[Bound, Bound]:
    lo, hi = interval
    ends = [_pow_end(lo, n), _pow_end(hi, n)]
    if n % 2 == 0 and lo < 0 < hi:
        return 0, max(ends)
    return min(ends), max(ends)


def _pow_end(x: Bound, n: int) -> Bound:
    if math.isinf(x):
        return INF if x > 0 or n % 2 == 0 else -INF
    return x**n


def _floor_end(x: Bound, divisor: int) -> Bound:
    return x if math.isinf(x) else int(x) // divisor


def _atom_bounds(atom: Atom) -> tuple[Bound, Bound]:
    if isinstance(atom, Symbol):
        return atom.lo, atom.hi
    (a_lo, a_hi), (b_lo, b_hi) = (bounds(arg) for arg in atom.args)
    if atom.kind == "max":
        return max(a_lo, b_lo), max(a_hi, b_hi)
    if atom.kind == "min":
        return min(a_lo, b_lo), min(a_hi, b_hi)
    if atom.kind == "//":
        if b_lo == b_hi and not math.isinf(b_lo) and b_lo > 0:
            return _floor_end(a_lo, int(b_lo)), _floor_end(a_hi, int(b_lo))
        return (0, a_hi) if a_lo >= 0 and b_lo >= 1 else (-INF, INF)
    # Python's a % b has b's sign and |a % b| < |b|.
    if b_lo >= 1:
        hi = _add(b_hi, -1)
        return (0, min(hi, a_hi)) if a_lo >= 0 else (0, hi)
    return (-INF, INF)


def bounds(expr: Expr) -> tuple[Bound, Bound]:
    """The interval ``expr``'s value lies in, given its symbols' ranges (cached)."""
    if expr._bounds is None:
        lo: Bound = 0
        hi: Bound = 0
        for mono, coef in expr.terms:
            term_lo, term_hi = _term_bounds(mono)
            if coef > 0:
                lo, hi = _add(lo, _mul(coef, term_lo)), _add(hi, _mul(coef, term_hi))
            else:
                lo, hi = _add(lo, _mul(coef, term_hi)), _add(hi, _mul(coef, term_lo))
        expr._bounds = (lo, hi)
    return expr._bounds


def shifted(interval: tuple[Bound, Bound], offset: int) -> tuple[Bound, Bound]:
    """``interval`` moved by ``offset`` (infinite ends stay infinite)."""
    return _add(interval[0], offset), _add(interval[1], offset)


def _term_bounds(mono: Monomial) -> tuple[Bound, Bound]:
    if len(mono) == 1 and mono[0][1] == 1:
        return _atom_bounds(mono[0][0])  # the common case: one atom, power 1
    term: tuple[Bound, Bound] = (1, 1)
    for atom, power in mono:
        term = _interval_mul(term, _power(_atom_bounds(atom), power))
    return term

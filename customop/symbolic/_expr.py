"""Integer expressions over size symbols, in one canonical form.

An `Expr` is a polynomial with int coefficients whose atoms are symbols
(``s0``) and the functions shape code needs beyond ``+ - *``: floor division,
modulo, max and min (each an atom over sub-expressions). Like terms combine,
so two expressions built differently but equal as polynomials are the same
`Expr` (equal and equally hashed); `is_constant` tells when one is a plain number.

Expressions print as Python (``2*s0 + 1``, ``s0 // 2``, ``max(s0, 3)``),
using only ``+ - * // %``, ``max`` and ``min``. Division, modulo, max/min and
value ranges live in `customop.symbolic._ops`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, TypeAlias, final

if TYPE_CHECKING:
    from customop.symbolic._facts import Facts

__all__ = ["INF", "Bound", "Expr", "Func", "Monomial", "Symbol", "make_func"]

#: An interval end: an int, or ``-INF`` / ``INF`` (floats) for an unbounded side.
Bound: TypeAlias = int | float
INF: Final = math.inf
_AtomKey: TypeAlias = tuple[int, int, str]


@final
class Symbol:
    """One size symbol: its name (``s0``), number (for ordering) and range ``[lo, hi]``.

    Symbols compare by all four; the hash and sort key are computed once, since
    every expression operation hashes and sorts its atoms. ``facts`` are the
    recorded assumptions of the `ShapeEnv` that made it (not part of equality).
    """

    __slots__ = ("_hash", "facts", "hi", "index", "key", "lo", "name")

    def __init__(
        self, name: str, index: int, lo: Bound = 0, hi: Bound = INF, facts: Facts | None = None
    ) -> None:
        self.name = name
        self.index = index
        self.lo = lo
        self.hi = hi
        self.facts = facts
        self.key: _AtomKey = (0, index, name)
        self._hash = hash((name, index, lo, hi))

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, Symbol)
            and (self.name, self.index, self.lo, self.hi)
            == (other.name, other.index, other.lo, other.hi)
        )

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[Symbol], tuple[str, int, Bound, Bound]]:
        return (Symbol, (self.name, self.index, self.lo, self.hi))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Symbol({self.name!r}, {self.index}, {self.lo}, {self.hi})"


@final
class Func:
    """An atom that is a function of two expressions: ``//``, ``%``, ``max`` or ``min``."""

    __slots__ = ("_hash", "args", "key", "kind", "text")

    def __init__(self, kind: str, args: tuple[Expr, Expr], text: str) -> None:
        self.kind = kind
        self.args = args
        self.text = text
        self.key: _AtomKey = (1, 0, text)
        self._hash = hash((kind, args))

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, Func) and self.kind == other.kind and self.args == other.args
        )

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Func({self.text!r})"


Atom: TypeAlias = Symbol | Func
#: A product of atoms with powers >= 1, sorted by atom key; () is the constant 1.
Monomial: TypeAlias = tuple[tuple[Atom, int], ...]
_TermKey: TypeAlias = tuple[int, tuple[tuple[_AtomKey, int], ...]]

# Sort keys of monomials, memoised: expressions are rebuilt from the same few terms.
_TERM_KEYS: dict[Monomial, _TermKey] = {}
_CACHE_MAX: Final = 4096


def _term_key(item: tuple[Monomial, int]) -> _TermKey:
    mono = item[0]
    key = _TERM_KEYS.get(mono)
    if key is None:
        key = (-sum(power for _, power in mono), tuple((atom.key, power) for atom, power in mono))
        if len(_TERM_KEYS) >= _CACHE_MAX:
            _TERM_KEYS.clear()
        _TERM_KEYS[mono] = key
    return key


@final
class Expr:
    """A canonical polynomial: ``terms`` are (monomial, nonzero coefficient), by degree."""

    __slots__ = ("_bounds", "_hash", "_text", "terms")

    terms: tuple[tuple[Monomial, int], ...]

    def __init__(self, terms: Mapping[Monomial, int]) -> None:
        items = [(m, c) for m, c in terms.items() if c]
        if len(items) > 1:
            items.sort(key=_term_key)
        self.terms = tuple(items)
        self._hash = hash(self.terms)
        self._bounds: tuple[Bound, Bound] | None = None
        self._text: str | None = None

    @staticmethod
    def const(value: int) -> Expr:
        found = _CONSTANTS.get(value)
        if found is None:
            found = Expr({(): value})
            if -256 <= value <= 256:  # the small constants shape code uses over and over
                _CONSTANTS[value] = found
        return found

    @staticmethod
    def atom(atom: Atom) -> Expr:
        return Expr({((atom, 1),): 1})

    @property
    def is_constant(self) -> bool:
        return not self.terms or (len(self.terms) == 1 and self.terms[0][0] == ())

    @property
    def constant(self) -> int:
        """The constant term (the whole value when `is_constant`)."""
        return dict(self.terms).get((), 0)

    @property
    def single_atom(self) -> Atom | None:
        """The atom when the expression is exactly one atom (coefficient 1, power 1)."""
        if len(self.terms) == 1:
            mono, coef = self.terms[0]
            if coef == 1 and len(mono) == 1 and mono[0][1] == 1:
                return mono[0][0]
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and self._hash == other._hash and self.terms == other.terms

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        if self._text is None:
            self._text = _format(self)
        return self._text

    def __repr__(self) -> str:
        return f"Expr({str(self)!r})"

    # -- arithmetic ------------------------------------------------------------------

    @staticmethod
    def _sorted(terms: tuple[tuple[Monomial, int], ...]) -> Expr:
        """An expression from terms already in canonical order (nonzero coefficients)."""
        expr = object.__new__(Expr)
        expr.terms = terms
        expr._hash = hash(terms)
        expr._bounds = None
        expr._text = None
        return expr

    def __add__(self, other: Expr) -> Expr:
        if other.is_constant:
            return self._plus(other.constant)
        if self.is_constant:
            return other._plus(self.constant)
        terms = dict(self.terms)
        for mono, coef in other.terms:
            terms[mono] = terms.get(mono, 0) + coef
        return Expr(terms)

    def _plus(self, value: int) -> Expr:
        # The constant term, if any, is the last one (degree 0 sorts last).
        terms = self.terms
        if terms and terms[-1][0] == ():
            total = terms[-1][1] + value
            rest = terms[:-1]
            return Expr._sorted((*rest, ((), total)) if total else rest)
        return Expr._sorted((*terms, ((), value))) if value else self

    def __neg__(self) -> Expr:
        return self.scale(-1)

    def __sub__(self, other: Expr) -> Expr:
        return self + -other

    def scale(self, factor: int) -> Expr:
        if not factor:
            return Expr.const(0)
        # A nonzero factor keeps every term, and so the order.
        return Expr._sorted(tuple((mono, coef * factor) for mono, coef in self.terms))

    def __mul__(self, other: Expr) -> Expr:
        if other.is_constant:
            return self.scale(other.constant)
        if self.is_constant:
            return other.scale(self.constant)
        terms: dict[Monomial, int] = {}
        for left, a in self.terms:
            for right, b in other.terms:
                mono = _mono_mul(left, right)
                terms[mono] = terms.get(mono, 0) + a * b
        return Expr(terms)

    # -- inspection ------------------------------------------------------------------

    def symbols(self) -> set[Symbol]:
        found: set[Symbol] = set()
        for mono, _ in self.terms:
            for atom, _ in mono:
                if isinstance(atom, Symbol):
                    found.add(atom)
                else:
                    for arg in atom.args:
                        found |= arg.symbols()
        return found

    def evaluate(self, values: Mapping[str, int]) -> int:
        """The value with each symbol replaced by ``values[name]`` (a KeyError if missing)."""
        total = 0
        for mono, coef in self.terms:
            product = coef
            for atom, power in mono:
                product *= _atom_value(atom, values) ** power
            total += product
        return total


_CONSTANTS: dict[int, Expr] = {}


def _atom_value(atom: Atom, values: Mapping[str, int]) -> int:
    if isinstance(atom, Symbol):
        return values[atom.name]
    a, b = (arg.evaluate(values) for arg in atom.args)
    if atom.kind == "//":
        return a // b
    if atom.kind == "%":
        return a % b
    return max(a, b) if atom.kind == "max" else min(a, b)


def _mono_mul(left: Monomial, right: Monomial) -> Monomial:
    powers: dict[Atom, int] = dict(left)
    for atom, power in right:
        powers[atom] = powers.get(atom, 0) + power
    return tuple(sorted(powers.items(), key=lambda item: item[0].key))


def make_func(kind: str, a: Expr, b: Expr) -> Func:
    if kind in ("max", "min") and (b.is_constant, str(b)) < (a.is_constant, str(a)):
        # Symmetric: one order (constants last), so max(a, b) is max(b, a).
        a, b = b, a
    infix = kind in ("//", "%")
    text = f"{_operand(a)} {kind} {_operand(b)}" if infix else f"{kind}({a}, {b})"
    return Func(kind, (a, b), text)


# -- printing ----------------------------------------------------------------------------


def _operand(expr: Expr) -> str:
    """An operand of ``//`` or ``%``: bare when it is one symbol, max/min or a constant >= 0."""
    atom = expr.single_atom
    simple = (expr.is_constant and expr.constant >= 0) or (
        atom is not None and (isinstance(atom, Symbol) or atom.kind in ("max", "min"))
    )
    return str(expr) if simple else f"({expr})"


def _factor(atom: Atom, power: int, alone: bool) -> str:
    text = str(atom)
    if isinstance(atom, Func) and atom.kind in ("//", "%") and (power != 1 or not alone):
        text = f"({text})"  # `2*s0 // 2` would read as (2*s0) // 2
    # Powers print as products (s0*s0), so the text stays within + - * // % max min,
    # the arithmetic the trace layer's size evaluator reads back.
    return "*".join([text] * power)


def _monomial(mono: Monomial, alone: bool) -> str:
    return "*".join(_factor(atom, power, alone and len(mono) == 1) for atom, power in mono)


def _format(expr: Expr) -> str:
    if not expr.terms:
        return "0"
    parts: list[str] = []
    for mono, coef in expr.terms:
        size = abs(coef)
        first = not parts
        if not mono:
            body = str(size)
        else:
            # A bare `s0 // 2` may follow ' - ' or lead; with a sign of its own it needs parens.
            body = _monomial(mono, alone=size == 1 and (coef > 0 or not first))
            body = body if size == 1 else f"{size}*{body}"
        if first:
            parts.append(body if coef > 0 else f"-{body}")
        else:
            parts.append(f" + {body}" if coef > 0 else f" - {body}")
    return "".join(parts)

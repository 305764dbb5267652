"""`SymInt`: a symbolic integer for sizes that depend on data, and `ShapeEnv`, which makes them.

A fake impl that cannot know an output size (``nonzero``, ``unique``) asks for
a fresh symbol, ``s0``, with a range (``min=0, max=None`` for a size). Shape
code then computes with it as with an int: ``+ - * // %`` and ``**`` give
new expressions (``2*s0 + 1``), and results that are constant are plain ints
(``s0 - s0`` is ``0``).

Semantics, decided here once:

* **Comparisons** (``< <= > >= == !=``) return a plain bool when the
  symbols' ranges, or the facts their `ShapeEnv` recorded, decide them, and a
  `SymBool` otherwise; ``bool()`` of an undecided one raises
  `DataDependentError` (see `customop.symbolic._symbool`). ``s0 >= 0`` is True
  for a size; ``s0 > 3`` is a SymBool, so ``if s0 > 3:`` raises; after
  ``customop.check(s0 > 3)`` it is True. Builtin ``max``/``min`` work when
  decidable; `sym_max` / `sym_min` never raise: undecided, they stay symbolic
  (``max(s0, 3)``).
* **Equality and hashing.** ``s0 == s0`` is True, and so is any equality of
  two expressions with the same canonical form (``s0 + s0 == 2*s0``). ``s0 ==
  3`` is decided by the range (and recorded facts): False when 3 is outside it,
  True when the range is exactly ``[3, 3]``, else a SymBool. Hashes follow the canonical form,
  so equal expressions hash alike; a SymInt that a range pins to an int equals
  that int but hashes differently, so do not mix the two as dict keys.
* **Printing.** ``str(s)`` is Python over the symbol names using only
  ``+ - * // %``, ``max`` and ``min`` (powers print as products, ``s0*s0``),
  so a graph can store sizes as text and compute them again from bindings.
* **No concrete value.** SymInt has no ``__index__`` or ``__int__``: ``int(s0)``,
  ``range(s0)`` and ``numpy.empty((s0,))`` fail instead of guessing. `evaluate`
  substitutes values for the symbols when they are known.

Symbols are identified by name and range, so use one `ShapeEnv` per fake mode
or trace: two environments both name their first symbol ``s0``.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias, final

from customop.symbolic._expr import INF, Bound, Expr, Symbol
from customop.symbolic._facts import Facts
from customop.symbolic._ops import bounds, extremum, floordiv, mod
from customop.symbolic._symbool import DataDependentError, SymBool, compare, show_range

__all__ = [
    "DataDependentError",
    "IntLike",
    "ShapeEnv",
    "SymInt",
    "as_int",
    "sym_max",
    "sym_min",
]


def as_int(value: object) -> int | None:
    """``value`` as an int when it is one (bool excluded) or a numpy integer, else None."""
    if type(value) is int:
        return value
    if isinstance(value, int):
        return None if isinstance(value, bool) else value
    numpy = sys.modules.get("numpy")  # a numpy integer means numpy is imported
    return int(value) if numpy is not None and isinstance(value, numpy.integer) else None


def _as_expr(value: object) -> Expr | None:
    if isinstance(value, SymInt):
        return value._expr
    number = as_int(value)
    return None if number is None else Expr.const(number)


def _wrap(expr: Expr) -> SymInt | int:
    return expr.constant if expr.is_constant else SymInt(expr)


def _end(bound: Bound) -> int | None:
    return None if math.isinf(bound) else int(bound)


#: What torch's functions do with customop's objects among their arguments: set by
#: ``customop.tensor`` (a layer up), which fakes them (`customop.tensor._fake_torch`).
TORCH_FUNCTION: list[Callable[[Any, tuple[Any, ...], dict[str, Any] | None], Any]] = []


def _torch_function(
    cls: type,
    func: Any,
    types: tuple[Any, ...],
    args: tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
) -> Any:
    # torch calls this for any of its functions given an object whose class has it.
    if not TORCH_FUNCTION:
        return NotImplemented
    return TORCH_FUNCTION[0](func, args, kwargs)


#: ``__torch_function__`` of customop's classes that torch code passes to torch's functions
#: (SymInt here; the tensor layer's dtype, Device and FakeTensor): one definition for all.
torch_function_hook: Final[Any] = classmethod(_torch_function)


@final
class SymInt:
    """A symbolic integer: a size symbol (``s0``) or an expression of them (``2*s0 + 1``).

    Made by `ShapeEnv.new_symint` (in fake impls: ``get_ctx().new_dynamic_size()``),
    never directly. See the module docstring for comparison and hashing rules.
    """

    __slots__ = ("_expr",)

    # numpy scalars defer to SymInt's reflected operators (np.int64(2) * s0).
    __array_ufunc__ = None

    # A torch function given a SymInt (torch.empty((s0, 3)) in a fake impl) makes a fake.
    __torch_function__ = torch_function_hook

    _expr: Expr

    def __init__(self, expr: Expr) -> None:
        if not isinstance(expr, Expr):
            raise TypeError(
                f"SymInt: expected an expression, got {expr!r}. SymInts come from a shape "
                "environment, which tracks their symbols' ranges. Use "
                "ShapeEnv().new_symint(min=0, max=None) (get_ctx().new_dynamic_size() in a "
                "fake impl)."
            )
        self._expr = expr

    # -- arithmetic: int | SymInt in, a plain int whenever the result is constant -----

    def __add__(self, other: IntLike) -> IntLike:
        right = _as_expr(other)
        return NotImplemented if right is None else _wrap(self._expr + right)

    def __radd__(self, other: int) -> IntLike:
        return self.__add__(other)

    def __sub__(self, other: IntLike) -> IntLike:
        right = _as_expr(other)
        return NotImplemented if right is None else _wrap(self._expr - right)

    def __rsub__(self, other: int) -> IntLike:
        left = _as_expr(other)
        return NotImplemented if left is None else _wrap(left - self._expr)

    def __mul__(self, other: IntLike) -> IntLike:
        right = _as_expr(other)
        return NotImplemented if right is None else _wrap(self._expr * right)

    def __rmul__(self, other: int) -> IntLike:
        return self.__mul__(other)

    def __floordiv__(self, other: IntLike) -> IntLike:
        right = _as_expr(other)
        return NotImplemented if right is None else _wrap(floordiv(self._expr, right))

    def __rfloordiv__(self, other: int) -> IntLike:
        left = _as_expr(other)
        return NotImplemented if left is None else _wrap(floordiv(left, self._expr))

    def __mod__(self, other: IntLike) -> IntLike:
        right = _as_expr(other)
        return NotImplemented if right is None else _wrap(mod(self._expr, right))

    def __rmod__(self, other: int) -> IntLike:
        left = _as_expr(other)
        return NotImplemented if left is None else _wrap(mod(left, self._expr))

    def __pow__(self, exponent: int) -> IntLike:
        if isinstance(exponent, bool) or not isinstance(exponent, int) or exponent < 0:
            raise TypeError(
                f"SymInt: {self} ** {exponent!r} needs an exponent that is an int >= 0. "
                "Other powers of a size are not integers. Multiply explicitly instead."
            )
        result = Expr.const(1)
        for _ in range(exponent):
            result = result * self._expr
        return _wrap(result)

    def __neg__(self) -> IntLike:
        return _wrap(-self._expr)

    def __pos__(self) -> SymInt:
        return self

    def __abs__(self) -> IntLike:
        return _wrap(extremum("max", self._expr, -self._expr))

    def __truediv__(self, other: object) -> SymInt:
        raise TypeError(
            f"SymInt: {self} / {other!r} would be a fraction. Sizes are integers, and customop "
            "has no symbolic floats. Use // for floor division."
        )

    def __rtruediv__(self, other: object) -> SymInt:
        raise TypeError(
            f"SymInt: {other!r} / {self} would be a fraction. Sizes are integers, and customop "
            "has no symbolic floats. Use // for floor division."
        )

    # -- comparisons: a bool when decided, else a SymBool (see _symbool) -------------

    def __lt__(self, other: IntLike) -> bool | SymBool:
        right = _as_expr(other)
        return NotImplemented if right is None else compare(self._expr, "<", right)

    def __le__(self, other: IntLike) -> bool | SymBool:
        right = _as_expr(other)
        return NotImplemented if right is None else compare(self._expr, "<=", right)

    def __gt__(self, other: IntLike) -> bool | SymBool:
        right = _as_expr(other)
        return NotImplemented if right is None else compare(self._expr, ">", right)

    def __ge__(self, other: IntLike) -> bool | SymBool:
        right = _as_expr(other)
        return NotImplemented if right is None else compare(self._expr, ">=", right)

    def __eq__(self, other: object) -> bool | SymBool:  # type: ignore[override]
        right = _as_expr(other)
        return NotImplemented if right is None else compare(self._expr, "==", right)

    def __ne__(self, other: object) -> bool | SymBool:  # type: ignore[override]
        right = _as_expr(other)
        return NotImplemented if right is None else compare(self._expr, "!=", right)

    def __bool__(self) -> bool:
        return bool(compare(self._expr, "!=", Expr.const(0)))

    def __hash__(self) -> int:
        return hash(self._expr)

    # -- inspection -------------------------------------------------------------------

    @property
    def value_range(self) -> tuple[int | None, int | None]:
        """``(min, max)`` the value is known to lie in; None for an unbounded side."""
        lo, hi = bounds(self._expr)
        return _end(lo), _end(hi)

    @property
    def symbols(self) -> tuple[str, ...]:
        """Names of the symbols in the expression, in creation order: ``("s0", "s1")``."""
        return tuple(s.name for s in sorted(self._expr.symbols(), key=lambda s: s.key))

    @property
    def is_symbol(self) -> bool:
        """True for a bare symbol (``s0``), False for an expression (``s0 + 1``)."""
        return isinstance(self._expr.single_atom, Symbol)

    def evaluate(self, values: Mapping[str, int]) -> int:
        """The value with each symbol replaced: ``(2*s0 + 1).evaluate({"s0": 3}) == 7``.

        Args:
            values: a value for each symbol, by name (``{"s0": 3}``).

        Returns:
            The integer value.

        Raises:
            KeyError: a symbol has no value.
        """
        missing = [name for name in self.symbols if name not in values]
        if missing:
            raise KeyError(
                f"SymInt.evaluate: no value for {', '.join(missing)} in {self}. Every symbol "
                "needs a value to compute the expression. Pass a mapping with a value for "
                f"each of {', '.join(self.symbols)}."
            )
        return self._expr.evaluate(values)

    def __str__(self) -> str:
        return str(self._expr)

    def __repr__(self) -> str:
        return str(self._expr)

    def __copy__(self) -> SymInt:
        return self

    def __deepcopy__(self, memo: object) -> SymInt:
        return self


#: A size: a plain int or a `SymInt`.
IntLike: TypeAlias = int | SymInt


def _extremum(kind: str, a: IntLike, b: IntLike) -> IntLike:
    left, right = _as_expr(a), _as_expr(b)
    if left is None or right is None:
        bad = a if left is None else b
        raise TypeError(
            f"sym_{kind}: expected ints or SymInts, got {type(bad).__qualname__} {bad!r}. "
            f"It computes the {kind} of sizes. Pass sizes, such as x.shape[0]."
        )
    return _wrap(extremum(kind, left, right))


def sym_max(a: IntLike, b: IntLike) -> IntLike:
    """``max(a, b)`` that never raises: decided by the ranges when they can, else ``max(s0, 3)``.

    Args:
        a: an int or a `SymInt`.
        b: an int or a `SymInt`.

    Returns:
        The larger, or a symbolic ``max``.
    """
    return _extremum("max", a, b)


def sym_min(a: IntLike, b: IntLike) -> IntLike:
    """``min(a, b)`` that never raises: decided by the ranges when they can, else ``min(s0, 3)``.

    Args:
        a: an int or a `SymInt`.
        b: an int or a `SymInt`.

    Returns:
        The smaller, or a symbolic ``min``.
    """
    return _extremum("min", a, b)


@final
class ShapeEnv:
    """Makes size symbols ``s0, s1, ...``, each with a value range. Thread-safe.

    The fake layer keeps one per `FakeTensorMode` (``get_ctx().new_dynamic_size``
    calls `new_symint`); a trace keeps one per graph.
    """

    __slots__ = ("_facts", "_lock", "_symbols")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._symbols: list[SymInt] = []
        self._facts = Facts()

    def new_symint(self, min: int | None = 0, max: int | None = None) -> SymInt:
        """A new symbol whose value lies in ``[min, max]`` (None: unbounded on that side).

        Args:
            min: the smallest value, or None.
            max: the largest value, or None.

        Returns:
            The new `SymInt`.
        """
        lo, hi = _check_bound("min", min, -INF), _check_bound("max", max, INF)
        if lo > hi:
            raise ValueError(
                f"ShapeEnv.new_symint: min={min} is greater than max={max}. No integer lies in "
                "an empty range. Pass min <= max."
            )
        with self._lock:
            index = len(self._symbols)
            symint = SymInt(Expr.atom(Symbol(f"s{index}", index, lo, hi, self._facts)))
            self._symbols.append(symint)
        return symint

    @property
    def symbols(self) -> tuple[SymInt, ...]:
        """Every symbol made so far, oldest first."""
        return tuple(self._symbols)

    @property
    def assumptions(self) -> tuple[str, ...]:
        """What ``customop.check`` assumed about these symbols, as written, oldest first."""
        return tuple(self._facts.recorded)

    def __repr__(self) -> str:
        return f"ShapeEnv({', '.join(f'{s}: {show_range(s._expr)}' for s in self._symbols)})"


def _check_bound(name: str, value: object, unbounded: float) -> Bound:
    if value is None:
        return unbounded
    number = as_int(value)
    if number is None:
        raise TypeError(
            f"ShapeEnv.new_symint: {name}={value!r} is not an int or None. A symbol's range "
            f"has integer ends. Pass an int, or None to leave the {name} unbounded."
        )
    return number

"""`SymBool`: a comparison of sizes that is not decided yet, as torch's ``SymBool``.

``s0 == s1`` and ``s0 < 8`` are decided, in this order, by the symbols' value
ranges, then by the facts their `ShapeEnv` recorded (``customop.check``).
A decided comparison is a plain ``bool``; an undecided one is a `SymBool`.
Only ``bool()`` of an undecided one raises `DataDependentError`: a branch
needs a value, while ``customop.check(s0 == s1)`` records the fact and
continues, so later comparisons use it.

``&``, ``|`` and ``~`` combine SymBools (and bools) without deciding them;
Python's ``and`` / ``or`` / ``not`` call ``bool()``, so they decide (or raise).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final, NoReturn, TypeAlias, final

from customop.exceptions import DataDependentError
from customop.symbolic._expr import Bound, Expr
from customop.symbolic._facts import Facts, normal_forms
from customop.symbolic._ops import bounds, shifted

__all__ = ["DataDependentError", "Relation", "SymBool", "compare", "show_range"]


def show_range(expr: Expr) -> str:
    """``[0, inf)``: the interval ``expr`` lies in, as text."""
    lo, hi = bounds(expr)
    left = "(-inf" if math.isinf(lo) else f"[{lo}"
    right = "inf)" if math.isinf(hi) else f"{hi}]"
    return f"{left}, {right}"


_NEGATED: Final = {"<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "=="}


@final
class Relation:
    """``left <op> right`` over expressions: one comparison."""

    __slots__ = ("left", "op", "right")

    def __init__(self, left: Expr, op: str, right: Expr) -> None:
        self.left, self.op, self.right = left, op, right

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"

    def facts(self) -> list[Facts]:
        """The fact stores of the ShapeEnvs whose symbols appear here."""
        found: dict[int, Facts] = {}
        for symbol in self.left.symbols() | self.right.symbols():
            if symbol.facts is not None:
                found[id(symbol.facts)] = symbol.facts
        return list(found.values())

    def decide(self) -> bool | None:
        expr, kind = normal_forms(self.left, self.op, self.right)
        for facts in self.facts():
            decided = facts.decide(expr, kind)
            if decided is not None:
                return decided
        return None


#: A condition: one comparison, or ``("and" | "or", parts)``.
Node: TypeAlias = "Relation | tuple[str, tuple[Node, ...]]"


def _decide(node: Node) -> bool | None:
    if isinstance(node, Relation):
        return node.decide()
    kind, parts = node
    results = [_decide(part) for part in parts]
    absorbing = kind == "or"  # True decides an or; False decides an and
    if absorbing in results:
        return absorbing
    return None if None in results else not absorbing


def _negate(node: Node) -> Node:
    if isinstance(node, Relation):
        return Relation(node.left, _NEGATED[node.op], node.right)
    kind, parts = node
    return ("or" if kind == "and" else "and", tuple(_negate(part) for part in parts))


def _text(node: Node) -> str:
    if isinstance(node, Relation):
        return str(node)
    kind, parts = node
    return f" {kind} ".join(f"({_text(part)})" for part in parts)


@final
class SymBool:
    """An undecided comparison of sizes (``s0 == s1``). ``bool()`` decides it or raises.

    Made by comparing `SymInt`s; pass one to ``customop.check`` to assume it.
    """

    __slots__ = ("_node",)

    def __init__(self, node: Node) -> None:
        self._node = node

    def __bool__(self) -> bool:
        decided = _decide(self._node)
        if decided is None:
            _raise_undecidable(self._node)
        return decided

    @property
    def decided(self) -> bool | None:
        """True or False when the ranges and recorded facts decide it now, else None."""
        return _decide(self._node)

    def __and__(self, other: SymBool | bool) -> SymBool | bool:
        if isinstance(other, bool):
            return self if other else False
        if not isinstance(other, SymBool):
            return NotImplemented
        return SymBool(("and", (self._node, other._node)))

    __rand__ = __and__

    def __or__(self, other: SymBool | bool) -> SymBool | bool:
        if isinstance(other, bool):
            return True if other else self
        if not isinstance(other, SymBool):
            return NotImplemented
        return SymBool(("or", (self._node, other._node)))

    __ror__ = __or__

    def __invert__(self) -> SymBool:
        return SymBool(_negate(self._node))

    def evaluate(self, values: Mapping[str, int]) -> bool:
        """The truth with each symbol replaced by ``values[name]``.

        It does not decide the condition for the symbols themselves (that is
        `decided`): it answers for one assignment of sizes, as `SymInt.evaluate`.

        Args:
            values: a size for each symbol of the condition, by name (``{"s0": 4}``).

        Returns:
            Whether the condition holds for these sizes.

        Raises:
            KeyError: a symbol of the condition has no entry in ``values``.

        Examples:
            >>> from customop.tensor import ShapeEnv
            >>> env = ShapeEnv()
            >>> s0, s1 = env.new_symint(), env.new_symint()
            >>> condition = (s0 == s1) | (s0 < 8)
            >>> condition.evaluate({"s0": 3, "s1": 5}), condition.evaluate({"s0": 9, "s1": 5})
            (True, False)
        """
        return _evaluate(self._node, values)

    def _record(self) -> list[str]:
        """Assume this condition in the ShapeEnvs of its symbols; returns what was assumed."""
        return _record(self._node)

    def __str__(self) -> str:
        return _text(self._node)

    def __repr__(self) -> str:
        return _text(self._node)


def _evaluate(node: Node, values: Mapping[str, int]) -> bool:
    if isinstance(node, Relation):
        left, right = node.left.evaluate(values), node.right.evaluate(values)
        return bool(compare(Expr.const(left), node.op, Expr.const(right)))
    kind, parts = node
    results = (_evaluate(part, values) for part in parts)
    return any(results) if kind == "or" else all(results)


def _record(node: Node) -> list[str]:
    if isinstance(node, tuple) and node[0] == "and":
        return [text for part in node[1] for text in _record(part)]
    text = _text(node)
    if isinstance(node, Relation):
        expr, kind = normal_forms(node.left, node.op, node.right)
        for facts in node.facts():
            facts.record(expr, kind, text)
    return [text]


def _raise_undecidable(node: Node) -> NoReturn:
    text = _text(node)
    if isinstance(node, Relation):
        subject = node.left if node.right.is_constant else node.left - node.right
        where = f"{subject} may be anywhere in {show_range(subject)}"
    else:
        where = "neither the ranges nor the recorded facts decide it"
    raise DataDependentError(
        f"SymInt: cannot decide {text}: {where}. A data-dependent size has no value while "
        "fake impls run, so a branch on it cannot be taken. Assert what the op requires "
        f"with customop.check({text}), give the size tighter bounds "
        "(new_dynamic_size(min=..., max=...)), or compute with sym_max / sym_min, which "
        "stay symbolic.",
        expression=text,
    )


# -- comparing ---------------------------------------------------------------------------


def _by_range(op: str, lo: Bound, hi: Bound) -> bool | None:
    if op == "<":
        return True if hi < 0 else False if lo >= 0 else None
    if op == "<=":
        return True if hi <= 0 else False if lo > 0 else None
    if op == ">":
        return True if lo > 0 else False if hi <= 0 else None
    if op == ">=":
        return True if lo >= 0 else False if hi < 0 else None
    if op == "==":
        return True if lo == hi == 0 else False if lo > 0 or hi < 0 else None
    return False if lo == hi == 0 else True if lo > 0 or hi < 0 else None


def compare(left: Expr, op: str, right: Expr) -> bool | SymBool:
    """``left <op> right``: a bool when ranges or recorded facts decide it, else a `SymBool`."""
    if right.is_constant:
        # Against an int (the common case): shift left's cached range, no new expression.
        lo, hi = shifted(bounds(left), -right.constant)
    else:
        diff = left - right
        lo, hi = (diff.constant, diff.constant) if diff.is_constant else bounds(diff)
    decided = _by_range(op, lo, hi)
    if decided is not None:
        return decided
    relation = Relation(left, op, right)
    decided = relation.decide()
    return SymBool(relation) if decided is None else decided

"""A graph's assumptions: conditions on sizes that ``customop.check`` made while tracing.

A fake impl that checks ``x.shape[0] == y.shape[0]`` on two symbolic sizes
does not raise: the condition is assumed (``s0 == s1``) and the trace keeps it
as text. Every run then evaluates it with the input sizes and refuses inputs
that break it, naming it. Conditions are comparisons (``== != < <= > >=``)
of the size arithmetic `evaluate` reads, joined by ``and`` / ``or`` / ``not``;
one that names a symbol no input binds (a data-dependent size) is not
checked, since its value is known only once the ops have run.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from customop.trace._errors import GraphError, fail
from customop.trace._symbolic import evaluate

__all__ = ["check_assumptions", "parse_condition"]

_COMPARE: Final[dict[type[ast.cmpop], Callable[[Any, Any], bool]]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


class _UnboundError(Exception):
    """A condition names a symbol the inputs do not bind."""


@functools.lru_cache(maxsize=256)
def parse_condition(text: str) -> ast.expr:
    """The parsed condition; a `GraphError` when ``text`` is not one."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        tree = None
    if tree is None or not _is_condition(tree):
        fail(
            f"Graph: assumption {text!r:.120} is not a condition on sizes. An assumption "
            "compares size expressions, such as 's0 == s1' or 's0 < 8'. Record them with "
            "customop.check in fake impls."
        )
    return tree


def _is_condition(node: ast.expr) -> bool:
    if isinstance(node, ast.BoolOp):
        return all(_is_condition(value) for value in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _is_condition(node.operand)
    return isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops)


def _holds(node: ast.expr, bindings: Mapping[str, Any]) -> bool:
    if isinstance(node, ast.BoolOp):
        results = (_holds(value, bindings) for value in node.values)
        return any(results) if isinstance(node.op, ast.Or) else all(results)
    if isinstance(node, ast.UnaryOp):
        return not _holds(node.operand, bindings)
    if not isinstance(node, ast.Compare):  # parse_condition allows nothing else
        return False
    left = _value(node.left, bindings)
    for op, right_node in zip(node.ops, node.comparators, strict=True):
        right = _value(right_node, bindings)
        if not _COMPARE[type(op)](left, right):
            return False
        left = right
    return True


def _value(node: ast.expr, bindings: Mapping[str, Any]) -> Any:
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - {"max", "min"}
    if not names <= bindings.keys():
        raise _UnboundError
    return evaluate(ast.unparse(node), bindings)


def check_assumptions(assumptions: Sequence[str], bindings: Mapping[str, Any]) -> None:
    """Raise `GraphError` naming the first assumption the input sizes break."""
    for text in assumptions:
        try:
            if _holds(parse_condition(text), bindings):
                continue
        except _UnboundError:
            continue  # a data-dependent size: unknown before the ops run
        values = ", ".join(f"{name} = {bindings[name]}" for name in sorted(bindings))
        raise GraphError(
            f"Graph.run: the inputs break the assumption {text} (with {values}). The graph "
            "was traced under it: a fake impl required it with customop.check, and the "
            "recorded ops rely on it. Pass inputs whose sizes satisfy it."
        )

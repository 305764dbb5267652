"""Evaluating symbolic-size text (``"2*s0 + 1"``) once the inputs fix the symbols.

A graph keeps symbolic sizes as text. When it runs, each symbol that is a
whole shape entry of a placeholder (``x: f32[s0, 3]``) is bound to the input's
size there; a symbolic argument (``reshape(x, [2*s0])``) is then computed from
those bindings. Only integer arithmetic is allowed: ``+ - * // %``, unary
minus, parentheses and ``max`` / ``min``; nothing is ever passed to ``eval``.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable, Mapping
from typing import Any, Final

from customop.trace._errors import GraphError

__all__ = ["evaluate"]

_BINARY: Final[dict[type[ast.operator], Callable[[Any, Any], Any]]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_CALLS: Final[dict[str, Callable[..., Any]]] = {"max": max, "min": min, "Max": max, "Min": min}


@functools.lru_cache(maxsize=1024)
def _parse(text: str) -> ast.expr:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        raise _error(text, "it is not an arithmetic expression") from None


def evaluate(text: str, bindings: Mapping[str, Any]) -> Any:
    """The value of ``text`` with each symbol replaced by its binding."""
    return _eval(_parse(text), text, bindings)


def _eval(node: ast.expr, text: str, bindings: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in bindings:
            known = ", ".join(sorted(bindings)) or "none"
            raise _error(
                text,
                f"symbol {node.id!r} is not a size of any input (symbols bound by the "
                f"inputs: {known}); data-dependent sizes cannot be recomputed",
            )
        return bindings[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _eval(node.left, text, bindings)
        return _BINARY[type(node.op)](left, _eval(node.right, text, bindings))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval(node.operand, text, bindings)
        return -value if isinstance(node.op, ast.USub) else value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _CALLS
        and node.args
        and not node.keywords
    ):
        values = [_eval(arg, text, bindings) for arg in node.args]
        return _CALLS[node.func.id](*values)
    raise _error(text, f"{ast.unparse(node)!r} is not integer arithmetic")


def _error(text: str, why: str) -> GraphError:
    return GraphError(
        f"Graph.run: cannot compute the symbolic size {text!r}: {why}. A symbolic argument "
        "is recomputed from the input sizes on every run. Trace again with static sizes, "
        "or pass that value as a graph input."
    )

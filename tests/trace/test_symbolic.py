"""Symbolic-size text evaluated from the input sizes: integer arithmetic only."""

from __future__ import annotations

import pytest

from customop.trace import GraphError
from customop.trace._symbolic import evaluate


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("s0", 4),
        ("2*s0 + 1", 9),
        ("-s0 + s1 // 2 - s1 % 3", -2),
        ("max(s0, 10) * Min(s1, 2)", 20),
        ("(s0 + 1) * 3", 15),
        ("+7", 7),
    ],
)
def test_arithmetic(text: str, value: int) -> None:
    assert evaluate(text, {"s0": 4, "s1": 8}) == value


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("s0 / 2", "'s0 / 2' is not integer arithmetic"),
        ("__import__('os')", "\"__import__('os')\" is not integer arithmetic"),
        ("s0 +", "it is not an arithmetic expression"),
        ("1.5", "'1.5' is not integer arithmetic"),
        ("u0", "symbol 'u0' is not a size of any input (symbols bound by the inputs: s0)"),
    ],
)
def test_anything_else_is_refused(text: str, why: str) -> None:
    with pytest.raises(GraphError) as excinfo:
        evaluate(text, {"s0": 4})
    assert str(excinfo.value).startswith(f"Graph.run: cannot compute the symbolic size {text!r}: ")
    assert why in str(excinfo.value)

"""Recorded facts are sound: whatever they decide agrees with every assignment they allow.

Hypothesis draws symbol values, records comparisons that hold for them (as
``customop.check`` would), then asks more comparisons: each one the facts
decide must have the value the drawn integers give.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from customop.tensor import ShapeEnv, SymBool, SymInt, check

COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
# A linear form: (coefficient of s0, of s1, of s2, constant).
Linear = tuple[int, int, int, int]
linear = st.tuples(*[st.integers(-2, 2)] * 3, st.integers(-6, 6))
relation = st.tuples(linear, st.sampled_from(sorted(COMPARE)), linear)
values = st.tuples(*[st.integers(0, 8)] * 3)


def build(form: Linear, symbols: list[Any]) -> Any:
    total: Any = form[3]
    for coefficient, symbol in zip(form[:3], symbols, strict=True):
        total = total + coefficient * symbol
    return total


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values, st.lists(relation, max_size=4), st.lists(relation, min_size=1, max_size=6))
def test_decisions_agree_with_every_allowed_assignment(
    assignment: tuple[int, int, int],
    facts: list[tuple[Linear, str, Linear]],
    queries: list[tuple[Linear, str, Linear]],
) -> None:
    env = ShapeEnv()
    symbols: list[SymInt] = [env.new_symint(0, 8) for _ in range(3)]
    ints = list(assignment)
    for left, op, right in facts:
        truth = COMPARE[op](build(left, ints), build(right, ints))
        cond = COMPARE[op](build(left, symbols), build(right, symbols))
        if truth and isinstance(cond, SymBool):
            check(cond)  # a fact that holds for the drawn values
    for left, op, right in queries:
        expected = COMPARE[op](build(left, ints), build(right, ints))
        got = COMPARE[op](build(left, symbols), build(right, symbols))
        if isinstance(got, SymBool):
            assert got.evaluate(dict(zip(("s0", "s1", "s2"), ints, strict=True))) is expected
        else:
            assert got is expected

"""Value ranges and normalised division of expressions (customop.symbolic._ops)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from customop.tensor import ShapeEnv, SymInt, sym_max, sym_min


@pytest.fixture
def syms() -> tuple[SymInt, SymInt, SymInt]:
    """s0 in [0, inf), s1 in [2, 10], s2 in [-5, 5]."""
    env = ShapeEnv()
    return env.new_symint(), env.new_symint(min=2, max=10), env.new_symint(min=-5, max=5)


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        pytest.param(lambda a, b, c: a + b, (2, None), id="sum"),
        pytest.param(lambda a, b, c: -b, (-10, -2), id="negation"),
        pytest.param(lambda a, b, c: b * c, (-50, 50), id="product-of-signs"),
        pytest.param(lambda a, b, c: c * c, (0, 25), id="even-power"),
        pytest.param(lambda a, b, c: c * c * c, (-125, 125), id="odd-power"),
        pytest.param(lambda a, b, c: b // 3, (0, 3), id="floordiv-const"),
        pytest.param(lambda a, b, c: a // b, (0, None), id="floordiv-symbolic"),
        pytest.param(lambda a, b, c: a % 7, (0, 6), id="mod-const"),
        pytest.param(lambda a, b, c: a % b, (0, 9), id="mod-symbolic"),
        pytest.param(lambda a, b, c: c % b, (0, 9), id="mod-negative-dividend"),
        pytest.param(lambda a, b, c: sym_max(a, c), (0, None), id="max"),
        pytest.param(lambda a, b, c: sym_min(b, c), (-5, 5), id="min"),
        pytest.param(lambda a, b, c: a * c, (None, None), id="unbounded-product"),
    ],
)
def test_value_ranges(
    syms: tuple[SymInt, SymInt, SymInt], build: Callable[..., Any], expected: tuple[Any, Any]
) -> None:
    result = build(*syms)
    assert isinstance(result, SymInt)
    assert result.value_range == expected


@pytest.mark.parametrize(
    ("build", "text"),
    [
        pytest.param(lambda a, b, c: (3 * a) // 2, "s0 + s0 // 2", id="pull-multiples"),
        pytest.param(lambda a, b, c: (-a) // 2, "-s0 + s0 // 2", id="negative-coefficient"),
        pytest.param(lambda a, b, c: a // -2, "-s0 + s0 // 2", id="negative-divisor"),
        pytest.param(lambda a, b, c: (a + 7) % 3, "(s0 + 1) % 3", id="reduce-constant"),
        pytest.param(lambda a, b, c: (c + 5) % 11, "s2 + 5", id="mod-proved-in-range"),
        pytest.param(lambda a, b, c: 0 // b, "0", id="zero-dividend"),
    ],
)
def test_normalised_division(
    syms: tuple[SymInt, SymInt, SymInt], build: Callable[..., Any], text: str
) -> None:
    assert str(build(*syms)) == text

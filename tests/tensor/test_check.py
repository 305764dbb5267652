"""`SymBool`, `check` and `check_is_size`: undecided size comparisons, and assumptions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from customop.tensor import (
    CheckError,
    DataDependentError,
    ShapeEnv,
    SymBool,
    SymInt,
    check,
    check_is_size,
)


@pytest.fixture
def env() -> ShapeEnv:
    return ShapeEnv()


def sizes(env: ShapeEnv) -> tuple[SymInt, SymInt]:
    return env.new_symint(), env.new_symint()


@pytest.mark.parametrize(
    ("build", "text"),
    [
        pytest.param(lambda a, b: a == b, "s0 == s1", id="eq"),
        pytest.param(lambda a, b: a != b, "s0 != s1", id="ne"),
        pytest.param(lambda a, b: a < 8, "s0 < 8", id="lt"),
        pytest.param(lambda a, b: a + 1 >= b, "s0 + 1 >= s1", id="ge-expr"),
        pytest.param(lambda a, b: (a > 2) & (b > 2), "(s0 > 2) and (s1 > 2)", id="and"),
        pytest.param(lambda a, b: (a > 2) | (b > 2), "(s0 > 2) or (s1 > 2)", id="or"),
        pytest.param(lambda a, b: ~(a == b), "s0 != s1", id="not"),
        pytest.param(lambda a, b: ~((a > 2) & (b < 3)), "(s0 <= 2) or (s1 >= 3)", id="de-morgan"),
    ],
)
def test_undecided_comparisons_are_symbolic(
    env: ShapeEnv, build: Callable[..., Any], text: str
) -> None:
    result = build(*sizes(env))
    assert isinstance(result, SymBool)
    assert str(result) == text
    assert result.decided is None
    with pytest.raises(DataDependentError) as info:
        bool(result)
    assert info.value.expression == text


def test_decided_comparisons_stay_plain_bools(env: ShapeEnv) -> None:
    s0, _ = sizes(env)
    same = s0
    assert (s0 >= 0) is True
    assert (s0 + 1 > s0) is True
    assert (s0 == same) is True
    assert (s0 < 0) is False


@pytest.mark.parametrize(
    ("other", "expected"), [(True, True), (False, False)], ids=["true", "false"]
)
def test_bools_combine_with_symbools(env: ShapeEnv, other: bool, expected: bool) -> None:
    s0, _ = sizes(env)
    cond = s0 > 3
    assert isinstance(cond, SymBool)
    assert (cond | other) is True if other else (cond | other) is cond
    assert (cond & other) is cond if other else (cond & other) is False
    assert (other & cond) is (cond if expected else False)


def test_check_records_an_equality_and_later_comparisons_use_it(env: ShapeEnv) -> None:
    s0, s1 = sizes(env)
    check(s0 == s1)
    assert env.assumptions == ("s0 == s1",)
    assert (s0 == s1) is True
    assert (2 * s0 + 1 == 2 * s1 + 1) is True
    assert (s0 != s1) is False
    assert (s1 + 3 > s0) is True


def test_check_records_bounds(env: ShapeEnv) -> None:
    s0, s1 = sizes(env)
    check(s0 < 8)
    assert (s0 <= 7) is True
    assert (s0 > 10) is False
    assert (s0 == 20) is False
    check(s1 >= s0 + 2)
    assert (s1 > s0) is True
    assert isinstance(s1 > s0 + 5, SymBool)
    assert env.assumptions == ("s0 < 8", "s1 >= s0 + 2")


def test_an_equality_substitutes_and_keeps_the_ranges() -> None:
    env = ShapeEnv()
    s0, s1 = env.new_symint(), env.new_symint(min=4, max=9)
    check(s0 == s1)
    assert (s0 >= 4) is True  # s1's range now bounds s0
    assert (s0 < 10) is True


def test_an_equality_with_coefficients_is_reduced(env: ShapeEnv) -> None:
    s0, s1 = sizes(env)
    check(2 * s0 == 2 * s1 + 4)
    assert (s0 == s1 + 2) is True
    assert (4 * s0 == 7) is False  # no integer solution


def test_a_not_equal_fact_decides_equality(env: ShapeEnv) -> None:
    s0, s1 = sizes(env)
    check(s0 != s1)
    assert (s0 == s1) is False
    assert (s1 != s0) is True


def test_an_and_records_both_parts(env: ShapeEnv) -> None:
    s0, s1 = sizes(env)
    check((s0 > 2) & (s1 < 5))
    assert env.assumptions == ("s0 > 2", "s1 < 5")
    assert (s0 >= 3) is True
    assert (s1 <= 4) is True


def test_facts_stay_in_their_env() -> None:
    first, second = ShapeEnv(), ShapeEnv()
    a0, a1 = first.new_symint(), first.new_symint()
    b0, b1 = second.new_symint(max=100), second.new_symint(max=100)
    check(a0 == a1)
    assert isinstance(b0 == b1, SymBool)
    assert second.assumptions == ()


@pytest.mark.parametrize(
    ("msg", "expected"),
    [
        pytest.param(None, "check: the condition is False. A fake impl ", id="default"),
        pytest.param("rows must match", "rows must match", id="text"),
        pytest.param(lambda: "made lazily", "made lazily", id="callable"),
    ],
)
def test_check_raises_on_false(env: ShapeEnv, msg: Any, expected: str) -> None:
    s0, s1 = sizes(env)
    check(s0 == s1)
    with pytest.raises(CheckError) as info:
        check(s0 < 0, msg)
    assert str(info.value).startswith(expected)
    assert isinstance(info.value, RuntimeError)


def test_check_of_a_false_fact_raises(env: ShapeEnv) -> None:
    s0, s1 = sizes(env)
    check(s0 == s1)
    with pytest.raises(CheckError, match="need different"):
        check(s0 != s1, "need different")


@pytest.mark.parametrize("cond", [True, np.bool_(True)], ids=["bool", "numpy"])
def test_check_passes_true(cond: Any) -> None:
    check(cond)


def test_check_message_callable_runs_only_on_failure() -> None:
    def never() -> str:
        raise AssertionError("called")

    check(True, never)


@pytest.mark.parametrize("cond", [1, "yes", None, np.ones(2)], ids=["int", "str", "none", "array"])
def test_check_refuses_non_conditions(cond: Any) -> None:
    with pytest.raises(TypeError, match=r"^check: cond must be a bool or a SymBool, got "):
        check(cond)


def test_check_is_size_on_symbols_records(env: ShapeEnv) -> None:
    s = env.new_symint(min=None)
    check_is_size(s, max=64)
    assert env.assumptions == ("s0 >= 0", "s0 <= 64")
    assert (s < 65) is True
    check_is_size(env.new_symint())  # a size already: nothing to record
    assert len(env.assumptions) == 2


@pytest.mark.parametrize(
    ("n", "max", "text"),
    [(-1, None, "-1 >= 0"), (9, 8, "9 <= 8")],
    ids=["negative", "above-max"],
)
def test_check_is_size_on_ints(n: int, max: int | None, text: str) -> None:
    check_is_size(3)
    with pytest.raises(CheckError) as info:
        check_is_size(n, max=max)
    assert str(info.value).startswith(f"check_is_size: {text} is False. ")


def test_check_is_size_refuses_non_sizes() -> None:
    with pytest.raises(TypeError, match="must be an int or a SymInt"):
        check_is_size(2.5)  # type: ignore[arg-type]


def test_symbool_evaluates(env: ShapeEnv) -> None:
    s0, s1 = sizes(env)
    cond = (s0 == s1) | (s0 > 5)
    assert isinstance(cond, SymBool)
    assert cond.evaluate({"s0": 2, "s1": 2}) is True
    assert cond.evaluate({"s0": 2, "s1": 3}) is False
    assert cond.evaluate({"s0": 6, "s1": 3}) is True

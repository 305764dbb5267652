"""SymInt and ShapeEnv: arithmetic, printing, decidable comparisons, errors."""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import pytest

from customop.tensor import DataDependentError, ShapeEnv, SymBool, SymInt, sym_max, sym_min

Build = Callable[[SymInt, SymInt], object]


@pytest.fixture
def s(env: ShapeEnv) -> tuple[SymInt, SymInt]:
    """s0 in [0, inf) (a size), s1 in [2, 10]."""
    return env.new_symint(), env.new_symint(min=2, max=10)


@pytest.mark.parametrize(
    ("build", "text"),
    [
        pytest.param(lambda a, b: a, "s0", id="symbol"),
        pytest.param(lambda a, b: 2 * a + 1, "2*s0 + 1", id="linear"),
        pytest.param(lambda a, b: a + a + 1 - a, "s0 + 1", id="like-terms"),
        pytest.param(lambda a, b: 1 - a, "-s0 + 1", id="leading-minus"),
        pytest.param(lambda a, b: (a + 1) * (a - 1), "s0*s0 - 1", id="expand"),
        pytest.param(lambda a, b: a * b + b * a, "2*s0*s1", id="commute"),
        pytest.param(lambda a, b: b + a, "s0 + s1", id="order"),
        pytest.param(lambda a, b: a // 2, "s0 // 2", id="floordiv"),
        pytest.param(lambda a, b: (2 * a + 5) // 2, "s0 + 2", id="floordiv-exact"),
        pytest.param(lambda a, b: (a + 3) // 2, "(s0 + 1) // 2 + 1", id="floordiv-split"),
        pytest.param(lambda a, b: 3 * (a // 2), "3*(s0 // 2)", id="floordiv-scaled"),
        pytest.param(lambda a, b: -(a // 2), "-(s0 // 2)", id="floordiv-negated"),
        pytest.param(lambda a, b: b - a // 2, "s1 - s0 // 2", id="floordiv-subtracted"),
        pytest.param(lambda a, b: (a // 2) ** 2, "(s0 // 2)*(s0 // 2)", id="floordiv-squared"),
        pytest.param(lambda a, b: a % 4, "s0 % 4", id="mod"),
        pytest.param(lambda a, b: (2 * a + 3) % 2, "1", id="mod-constant"),
        pytest.param(lambda a, b: b % 16, "s1", id="mod-in-range"),
        pytest.param(lambda a, b: b // 16, "0", id="floordiv-in-range"),
        pytest.param(lambda a, b: a // b, "s0 // s1", id="floordiv-symbolic"),
        pytest.param(lambda a, b: a // (b + 1), "s0 // (s1 + 1)", id="floordiv-paren"),
        pytest.param(lambda a, b: a % -2, "-(s0 % 2)", id="mod-negative"),
        pytest.param(lambda a, b: sym_max(a, 3), "max(s0, 3)", id="max"),
        pytest.param(lambda a, b: sym_min(3, a), "min(s0, 3)", id="min-ordered"),
        pytest.param(lambda a, b: sym_max(b, 1), "s1", id="max-decided"),
        pytest.param(lambda a, b: abs(a - 5), "max(-s0 + 5, s0 - 5)", id="abs"),
        pytest.param(lambda a, b: np.int64(2) * a + np.int64(1), "2*s0 + 1", id="numpy-ints"),
    ],
)
def test_prints_canonically(s: tuple[SymInt, SymInt], build: Build, text: str) -> None:
    assert str(build(*s)) == text


@pytest.mark.parametrize(
    ("build", "value"),
    [
        pytest.param(lambda a, b: a - a, 0, id="difference"),
        pytest.param(lambda a, b: a * 0 + 3, 3, id="times-zero"),
        pytest.param(lambda a, b: a // a, 1, id="self-division"),
        pytest.param(lambda a, b: a % a, 0, id="self-mod"),
        pytest.param(lambda a, b: a**0, 1, id="power-zero"),
    ],
)
def test_constants_fold_to_int(s: tuple[SymInt, SymInt], build: Build, value: int) -> None:
    result = build(*s)
    assert type(result) is int
    assert result == value


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        pytest.param(lambda a, b: a >= 0, True, id="size-nonnegative"),
        pytest.param(lambda a, b: a < 0, False, id="size-not-negative"),
        pytest.param(lambda a, b: a + 1 > a, True, id="successor"),
        pytest.param(lambda a, b: a == a, True, id="reflexive"),  # noqa: PLR0124 -- the point
        pytest.param(lambda a, b: a + a == 2 * a, True, id="same-form"),
        pytest.param(lambda a, b: a != a + 1, True, id="differs-by-constant"),
        pytest.param(lambda a, b: b > 1, True, id="range-lower"),
        pytest.param(lambda a, b: b <= 10, True, id="range-upper"),
        pytest.param(lambda a, b: b == 11, False, id="outside-range"),
        pytest.param(lambda a, b: 1 < b, True, id="reflected"),  # noqa: SIM300 -- int on the left
        pytest.param(lambda a, b: a % 4 < 4, True, id="mod-bounded"),
        pytest.param(lambda a, b: max(a, 0) == a, True, id="builtin-max"),
        pytest.param(lambda a, b: bool(a + 1), True, id="bool"),
        pytest.param(lambda a, b: a == "s0", False, id="not-a-number"),
    ],
)
def test_decidable_comparisons(s: tuple[SymInt, SymInt], build: Build, expected: bool) -> None:
    assert build(*s) is expected


@pytest.mark.parametrize(
    ("build", "expression", "subject"),
    [
        pytest.param(lambda a, b: a > 3, "s0 > 3", "s0 may be anywhere in [0, inf)", id="gt"),
        pytest.param(lambda a, b: a == 3, "s0 == 3", "s0 may be anywhere in [0, inf)", id="eq"),
        pytest.param(
            lambda a, b: a < b, "s0 < s1", "s0 - s1 may be anywhere in [-10, inf)", id="symbols"
        ),
        pytest.param(lambda a, b: bool(a), "s0 != 0", "s0 may be anywhere in [0, inf)", id="bool"),
        # builtin max compares 3 > s0, which Python reflects to s0 < 3.
        pytest.param(
            lambda a, b: max(a, 3), "s0 < 3", "s0 may be anywhere in [0, inf)", id="builtin-max"
        ),
    ],
)
def test_bool_of_undecidable_comparisons_raises(
    s: tuple[SymInt, SymInt], build: Build, expression: str, subject: str
) -> None:
    with pytest.raises(DataDependentError) as info:
        bool(build(*s))  # a comparison is a SymBool; only bool() must decide
    assert info.value.expression == expression
    assert str(info.value).startswith(f"SymInt: cannot decide {expression}: {subject}. ")
    assert isinstance(info.value, RuntimeError)


def test_undecidable_message(s: tuple[SymInt, SymInt]) -> None:
    undecided = s[0] > 3
    assert isinstance(undecided, SymBool)
    assert str(undecided) == "s0 > 3"
    with pytest.raises(DataDependentError) as info:
        bool(undecided)
    assert str(info.value) == (
        "SymInt: cannot decide s0 > 3: s0 may be anywhere in [0, inf). A data-dependent size "
        "has no value while fake impls run, so a branch on it cannot be taken. Assert what the "
        "op requires with customop.check(s0 > 3), give the size tighter bounds "
        "(new_dynamic_size(min=..., max=...)), or compute with sym_max / sym_min, which stay "
        "symbolic."
    )
    assert info.value.expression == "s0 > 3"


def test_hash_follows_the_canonical_form(s: tuple[SymInt, SymInt]) -> None:
    a, _ = s
    assert hash(a + a) == hash(2 * a)
    assert {a + 1: "x"}[1 + a] == "x"
    assert len({a, a + 0, 2 * a - a}) == 1


def test_inspection(s: tuple[SymInt, SymInt]) -> None:
    a, b = s
    assert a.value_range == (0, None)
    assert (b - 20).value_range == (-18, -10)
    assert (a * b).symbols == ("s0", "s1")
    assert (a // b).symbols == ("s0", "s1")
    assert a.is_symbol and not (a + 1).is_symbol
    expr = 2 * a * b + a // 3
    assert isinstance(expr, SymInt)
    assert expr.evaluate({"s0": 7, "s1": 2}) == 30


def test_evaluate_needs_every_symbol(s: tuple[SymInt, SymInt]) -> None:
    expr = s[0] + s[1]
    assert isinstance(expr, SymInt)
    with pytest.raises(KeyError) as info:
        expr.evaluate({"s0": 1})
    assert info.value.args[0] == (
        "SymInt.evaluate: no value for s1 in s0 + s1. Every symbol needs a value to compute "
        "the expression. Pass a mapping with a value for each of s0, s1."
    )


def test_no_concrete_value(s: tuple[SymInt, SymInt]) -> None:
    a, _ = s
    with pytest.raises(TypeError):
        int(a)  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        range(a)  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        np.empty((a, 2))  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        pytest.param(
            lambda a: a / 2,
            "SymInt: s0 / 2 would be a fraction. Sizes are integers, and customop has no "
            "symbolic floats. Use // for floor division.",
            id="truediv",
        ),
        pytest.param(
            lambda a: 2 / a,
            "SymInt: 2 / s0 would be a fraction. Sizes are integers, and customop has no "
            "symbolic floats. Use // for floor division.",
            id="rtruediv",
        ),
        pytest.param(
            lambda a: a**-1,
            "SymInt: s0 ** -1 needs an exponent that is an int >= 0. Other powers of a size "
            "are not integers. Multiply explicitly instead.",
            id="negative-power",
        ),
        pytest.param(
            lambda a: sym_max(a, 1.5),
            "sym_max: expected ints or SymInts, got float 1.5. It computes the max of sizes. "
            "Pass sizes, such as x.shape[0].",
            id="sym-max-float",
        ),
    ],
)
def test_type_errors(
    s: tuple[SymInt, SymInt], build: Callable[[SymInt], object], message: str
) -> None:
    with pytest.raises(TypeError) as info:
        build(s[0])
    assert str(info.value) == message


def test_division_by_zero(s: tuple[SymInt, SymInt]) -> None:
    with pytest.raises(ZeroDivisionError, match=r"^SymInt: s0 // 0 divides by zero\.$"):
        _ = s[0] // 0
    with pytest.raises(ZeroDivisionError, match=r"^SymInt: s0 % 0 divides by zero\.$"):
        _ = s[0] % 0


def test_unsupported_operand_types(s: tuple[SymInt, SymInt]) -> None:
    with pytest.raises(TypeError):
        _ = s[0] + 1.5  # type: ignore[operator]
    with pytest.raises(TypeError):
        _ = s[0] < 1.5  # type: ignore[operator]


def test_copies_are_the_same_object(s: tuple[SymInt, SymInt]) -> None:
    assert copy.copy(s[0]) is s[0]
    assert copy.deepcopy(s[0]) is s[0]


def test_not_constructed_directly() -> None:
    with pytest.raises(TypeError, match=r"^SymInt: expected an expression, got 3\."):
        SymInt(3)  # type: ignore[arg-type]


def test_shape_env_names_and_ranges(env: ShapeEnv) -> None:
    a = env.new_symint()
    b = env.new_symint(min=1, max=8)
    c = env.new_symint(min=None)
    assert [str(x) for x in env.symbols] == ["s0", "s1", "s2"]
    assert (a.value_range, b.value_range, c.value_range) == ((0, None), (1, 8), (None, None))
    assert repr(env) == "ShapeEnv(s0: [0, inf), s1: [1, 8], s2: (-inf, inf))"


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        pytest.param(
            {"min": 5, "max": 2},
            ValueError,
            "ShapeEnv.new_symint: min=5 is greater than max=2. No integer lies in an empty "
            "range. Pass min <= max.",
            id="empty-range",
        ),
        pytest.param(
            {"min": 0.5},
            TypeError,
            "ShapeEnv.new_symint: min=0.5 is not an int or None. A symbol's range has integer "
            "ends. Pass an int, or None to leave the min unbounded.",
            id="float-min",
        ),
        pytest.param(
            {"max": True},
            TypeError,
            "ShapeEnv.new_symint: max=True is not an int or None. A symbol's range has integer "
            "ends. Pass an int, or None to leave the max unbounded.",
            id="bool-max",
        ),
    ],
)
def test_shape_env_errors(
    env: ShapeEnv, kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        env.new_symint(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message
    assert env.symbols == ()

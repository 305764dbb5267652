"""infer_schema on the audit's inputs (issue #11 §2): clear errors, schemas that re-parse."""

from __future__ import annotations

import enum
import typing
from typing import Annotated, Literal, Optional

import pytest

from customop import Dispatcher, custom_op
from customop.exceptions import SchemaError
from customop.schema import infer_schema, parse_schema
from customop.tensor import Tensor


class Perm(enum.Flag):
    R = 1
    W = 2


def bare_literal(x: Tensor, mode: Literal) -> Tensor:  # type: ignore[valid-type]
    return x


def bare_annotated(x: Tensor, n: Annotated = 1) -> Tensor:  # type: ignore[valid-type]
    return x


def composite_flag(x: Tensor, p: Perm = Perm.R | Perm.W) -> Tensor:
    return x


def beyond_64_bits(x: Tensor, n: int = 2**64) -> Tensor:
    return x


def beyond_digit_limit(x: Tensor, n: int = 10**5000) -> Tensor:
    return x


def float_beyond_digit_limit(x: Tensor, n: float = 10**5000) -> Tensor:
    return x


def unannotated_huge(x: Tensor, n=10**5000) -> Tensor:  # type: ignore[no-untyped-def]
    return x


def lone_surrogate(x: Tensor, s: str = "\ud800") -> Tensor:
    return x


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (bare_literal, "is a bare Literal, with no values"),
        (bare_annotated, "is a bare Annotated, with no type"),
        (composite_flag, f"has the default {Perm.R | Perm.W!r}, which does not fit"),
        (beyond_64_bits, "has the default 18446744073709551616, beyond the 64-bit range"),
        (beyond_digit_limit, "has the default <an integer of about 5000 digits>, beyond"),
        (float_beyond_digit_limit, "beyond the 64-bit range"),
        (unannotated_huge, "parameter 'n' of function 'unannotated_huge' has no annotation"),
        (
            lone_surrogate,
            "parameter 's' of function 'lone_surrogate' has the default '\\ud800', "
            "which holds a lone surrogate. Schema text is UTF-8",
        ),
    ],
    ids=lambda v: getattr(v, "__name__", "message"),
)
def test_internal_errors_are_schema_errors(fn: typing.Callable[..., object], message: str) -> None:
    with pytest.raises(SchemaError) as caught:
        infer_schema(fn, mutates_args=())
    assert message in str(caught.value)
    assert len(str(caught.value)) < 1000


def test_unhashable_union_members_are_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # typing itself hashes Union members; a Union whose members cannot be hashed
    # still reaches infer_schema through get_args of user-made generic aliases.
    def fn(x: Tensor, p: typing.Union[int, str] = 1) -> Tensor:  # noqa: UP007
        return x

    real = typing.get_args
    monkeypatch.setattr(
        typing,
        "get_args",
        lambda a: (int, [1]) if a == typing.Union[int, str] else real(a),  # noqa: UP007
    )
    with pytest.raises(SchemaError, match="is a Union with no schema type"):
        infer_schema(fn, mutates_args=())


def optional_float_int_default(x: Tensor, eps: Optional[float] = 0) -> Tensor:  # noqa: UP045
    return x


def plain_float_int_default(x: Tensor, eps: float = 1) -> Tensor:
    return x


@pytest.mark.parametrize(
    "fn", [optional_float_int_default, plain_float_int_default], ids=["optional", "plain"]
)
def test_int_defaults_of_float_parameters_round_trip(fn: typing.Callable[..., object]) -> None:
    schema = infer_schema(fn, mutates_args=())
    assert parse_schema(str(schema)) == schema
    assert parse_schema(schema.format("source")) == schema


def test_custom_op_of_a_lone_surrogate_default_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match=r"custom_op 'sg::f': infer_schema: parameter 's'"):
        custom_op("sg::f", lone_surrogate, mutates_args=(), dispatcher=Dispatcher())

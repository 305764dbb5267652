"""Large and hostile schema text (issue #11 §1, §2, §4): bounded work, bounded messages.

Hex and 64-bit integer defaults, lone surrogates and non-BMP characters,
long postfix chains and long list defaults. No test here times anything:
each proves the parser stops early or reads in one pass by what it returns.
"""

from __future__ import annotations

import pytest

from customop.exceptions import SchemaError, SchemaParseError
from customop.schema import Argument, BaseType, Default, parse_schema
from customop.schema._lexer import MAX_DEPTH


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0x2FFFFFF", 0x2FFFFFF),
        ("0X10", 16),
        ("-0x10", -16),
        ("0x7FFFFFFFFFFFFFFF", 2**63 - 1),
        ("-0x8000000000000000", -(2**63)),
    ],
    ids=["fbgemm", "upper-x", "negative", "max", "min"],
)
def test_hex_integer_defaults_read_their_value_and_print_as_decimals(text: str, value: int) -> None:
    schema = parse_schema(f"ns::f(int info_B_mask={text}) -> ()")
    default = schema.arguments[0].default
    assert default is not None
    assert default.value == value
    assert str(schema) == f"ns::f(int info_B_mask={value}) -> ()"
    assert schema.format("source") == str(schema)
    assert parse_schema(str(schema)) == schema


def test_hex_elements_of_a_list_default() -> None:
    schema = parse_schema("ns::f(int[] m=[0x10, -0x1, 2]) -> ()")
    assert str(schema) == "ns::f(int[] m=[16, -1, 2]) -> ()"


@pytest.mark.parametrize(
    "text",
    ["9223372036854775808", "-9223372036854775809", "0x8000000000000000", "1" * 5000],
    ids=["max+1", "min-1", "hex-max+1", "5000-digits"],
)
def test_integers_beyond_64_bits_are_refused(text: str) -> None:
    with pytest.raises(SchemaParseError, match="out of range") as caught:
        parse_schema(f"ns::f(int x={text}) -> ()")
    assert "64-bit" in str(caught.value)
    assert len(str(caught.value)) < 800


@pytest.mark.parametrize("size", [2**63, -(2**63) - 1, 10**5000], ids=["max+1", "min-1", "huge"])
def test_the_model_refuses_integers_beyond_64_bits(size: int) -> None:
    with pytest.raises(SchemaError, match="out of the 64-bit range") as caught:
        Argument(name="x", type=BaseType(name="int"), default=Default(value=size))
    assert len(str(caught.value)) < 800


def test_lone_surrogate_in_a_string_default_is_a_parse_error() -> None:
    text = "ns::f(str s='a\ud83db') -> ()"
    with pytest.raises(SchemaParseError, match="lone surrogate") as caught:
        parse_schema(text)
    assert caught.value.column == text.index("\ud83d")
    str(caught.value).encode("utf-8")  # the message itself can be printed


@pytest.mark.parametrize("text", ["\U0001f600", "\U0001f600\u00e9\u4e2d", "\U00010348x"])
def test_non_bmp_characters_round_trip(text: str) -> None:
    schema = parse_schema(f"ns::f(str s='{text}') -> ()")
    assert schema.arguments[0].default == Default(value=text)
    assert parse_schema(str(schema)) == schema
    assert parse_schema(schema.format("source")) == schema


def test_a_long_postfix_chain_stops_at_the_depth_limit() -> None:
    chain = "?[]" * 500_000  # 1.5 MB
    with pytest.raises(SchemaParseError, match=f"more than {MAX_DEPTH} levels") as caught:
        parse_schema(f"ns::f(Tensor{chain} x) -> ()")
    # The caret is where the limit was passed, not at the end of the chain: reading stopped.
    assert caught.value.column < len("ns::f(Tensor") + 3 * MAX_DEPTH
    assert len(str(caught.value)) < 1000


@pytest.mark.parametrize("separator", [",", ", ", " ,\n "], ids=["tight", "spaced", "newlines"])
def test_a_long_int_list_default_parses(separator: str) -> None:
    values = [i % 1000 - 500 for i in range(200_000)]
    schema = parse_schema(f"ns::f(int[] x=[{separator.join(map(str, values))}]) -> ()")
    default = schema.arguments[0].default
    assert default is not None
    assert default.value == tuple(values)


def test_a_bad_element_in_a_long_list_default_is_found_with_a_bounded_message() -> None:
    items = ["1"] * 20_000 + ["x"] + ["2"] * 20_000
    with pytest.raises(SchemaParseError) as caught:
        parse_schema(f"ns::f(int[] x=[{', '.join(items)}]) -> ()")
    message = str(caught.value)
    assert "'x'" in message
    assert len(message) < 1000
    assert caught.value.column == len("ns::f(int[] x=[") + 3 * 20_000


def test_a_huge_line_is_quoted_around_the_caret_only() -> None:
    with pytest.raises(SchemaParseError) as caught:
        parse_schema("ns::f(Tensor x" + " " * 5_000_000 + "y z) -> ()")
    assert len(str(caught.value)) < 1000

"""Conformance against torch 2.13's own schemas (tests/data, made with torch 2.13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from customop.exceptions import SchemaParseError
from customop.schema import parse_schema

DATA = Path(__file__).parent.parent / "data"
TORCH_LINES = (DATA / "schemas_torch_2_13.txt").read_text().splitlines()
CANONICAL_ROWS = [
    line.split("\t")
    for line in (DATA / "native_functions_canonical.tsv").read_text().splitlines()[1:]
]
# torch prints these alias sets in hash order; customop keeps the order written.
ALIAS_ORDER_LINES = [line for line in TORCH_LINES if "(b|a)" in line]
# torch 2.13 ships one schema with a repeated argument name; customop's model forbids it.
DUPLICATE_NAME_LINE = next(line for line in TORCH_LINES if "clamp_nan_to_num" in line)


def test_corpus_sizes() -> None:
    assert len(TORCH_LINES) == 4436
    assert len(CANONICAL_ROWS) == 2584
    assert len(ALIAS_ORDER_LINES) == 8


def test_every_torch_schema_round_trips() -> None:
    failures = [line for line in TORCH_LINES if str(parse_schema(line, strict=False)) != line]
    assert failures == []


def test_alias_order_lines_are_stable() -> None:
    for line in ALIAS_ORDER_LINES:
        once = parse_schema(line)
        twice = parse_schema(str(once))
        assert once == twice
        assert str(twice) == str(once) == line


def test_alias_sets_compare_as_sets() -> None:
    written = parse_schema("ns::f(Tensor(a) x) -> Tensor(b|a)")
    torch_order = parse_schema("ns::f(Tensor(a) x) -> Tensor(a|b)")
    assert written == torch_order
    assert hash(written) == hash(torch_order)


def test_only_the_duplicate_name_schema_needs_lenient_mode() -> None:
    strict_failures = []
    for line in TORCH_LINES:
        try:
            parse_schema(line)
        except SchemaParseError:
            strict_failures.append(line)
    assert strict_failures == [DUPLICATE_NAME_LINE]


@pytest.mark.parametrize("style", ["canonical", "source"])
def test_native_functions_print_in_both_spellings(style: str) -> None:
    mismatches = []
    for source, canonical in CANONICAL_ROWS:
        schema = parse_schema("aten::" + source)
        expected = canonical if style == "canonical" else "aten::" + source
        if schema.format(style) != expected:  # type: ignore[arg-type]
            mismatches.append((expected, schema.format(style)))  # type: ignore[arg-type]
    assert mismatches == []


def test_source_and_canonical_spellings_are_equal_schemas() -> None:
    # Defaults compare by value, so `eps=1e-05` equals `eps=1.0000000000000001e-05`.
    # DeviceIndex stays its own type (so the source spelling can be printed back).
    for source, canonical in CANONICAL_ROWS:
        if "DeviceIndex" not in source:
            assert parse_schema("aten::" + source) == parse_schema(canonical)


def test_canonical_defaults_differ_from_source_where_torch_says() -> None:
    differing = [row for row in CANONICAL_ROWS if row[1] != "aten::" + row[0]]
    assert len(differing) == 165

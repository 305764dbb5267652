"""infer_schema with the inplace and out tags, and the tag rules on explicit schemas."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from customop import Tensor, infer_schema
from customop.exceptions import ExclusiveTagsError, SchemaError
from customop.schema import check_tagged_schema, parse_schema


def add_(x: Tensor, y: Tensor) -> Tensor: ...


def add_out(x: Tensor, y: np.ndarray, *, out: Tensor) -> Tensor: ...


def two_outs(x: Tensor, *, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]: ...


@pytest.mark.parametrize(
    ("fn", "mutates", "tags", "expected"),
    [
        pytest.param(
            add_, {"x"}, "inplace", "(Tensor(a0!) x, Tensor y) -> Tensor(a0!)", id="inplace"
        ),
        pytest.param(
            add_, ["x"], ["inplace"], "(Tensor(a0!) x, Tensor y) -> Tensor(a0!)", id="list"
        ),
        pytest.param(
            add_out,
            {"out"},
            "out",
            "(Tensor x, Tensor y, *, Tensor(a2!) out) -> Tensor(a2!)",
            id="out",
        ),
        pytest.param(
            two_outs,
            ("a", "b"),
            ("out",),
            "(Tensor x, *, Tensor(a1!) a, Tensor(a2!) b) -> (Tensor(a1!), Tensor(a2!))",
            id="two-outs",
        ),
        pytest.param(add_, (), None, "(Tensor x, Tensor y) -> Tensor", id="no-tags"),
        pytest.param(add_, (), "pointwise", "(Tensor x, Tensor y) -> Tensor", id="other-tag"),
    ],
)
def test_an_aliasing_tag_aliases_the_returns_to_the_written_arguments(
    fn: Callable[..., Any], mutates: Any, tags: Any, expected: str
) -> None:
    schema = infer_schema(fn, mutates_args=mutates, tags=tags)
    assert str(schema) == expected
    assert str(parse_schema(str(schema))) == expected  # and it parses back


def kw_only(*, x: Tensor) -> Tensor: ...


def int_first(x: int, y: Tensor) -> Tensor: ...


def returns_none(x: Tensor) -> None: ...


def positional_out(x: Tensor, out: Tensor) -> Tensor: ...


def optional_out(x: Tensor, *, out: Tensor | None) -> Tensor: ...


def tuple_one(x: Tensor, *, out: Tensor) -> tuple[Tensor]: ...


@pytest.mark.parametrize(
    ("fn", "mutates", "tag", "torch_says"),
    [
        pytest.param(kw_only, {"x"}, "inplace", "requires a positional Tensor argument", id="kw"),
        pytest.param(
            int_first, {"y"}, "inplace", "first positional argument to be a Tensor", id="int"
        ),
        pytest.param(add_, {"y"}, "inplace", "mutates_args to contain exactly", id="not-first"),
        pytest.param(
            returns_none, {"x"}, "inplace", "return annotation to be torch.Tensor", id="none"
        ),
        pytest.param(
            positional_out, {"out"}, "out", "mutable arguments to be keyword-only", id="pos"
        ),
        pytest.param(optional_out, {"out"}, "out", "only supports mutable keyword-only", id="opt"),
        pytest.param(add_out, (), "out", "at least one mutable keyword-only", id="no-out"),
        pytest.param(tuple_one, {"out"}, "out", "return annotation to match", id="tuple"),
    ],
)
def test_a_function_that_breaks_its_tag_is_refused_naming_the_rule(
    fn: Callable[..., Any], mutates: Any, tag: str, torch_says: str
) -> None:
    with pytest.raises(SchemaError) as info:
        infer_schema(fn, mutates_args=mutates, tags=tag)
    message = str(info.value)
    assert torch_says in message  # torch's sentence, for code that matches torch's messages
    assert message.startswith(f"infer_schema: function {fn.__qualname__!r} is tagged {tag}")


def test_inplace_and_out_together_are_both_a_schema_error_and_an_assertion_error() -> None:
    with pytest.raises(ExclusiveTagsError, match="mutually exclusive") as info:
        infer_schema(add_out, mutates_args={"out"}, tags=("inplace", "out"))
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, AssertionError)


@pytest.mark.parametrize(
    ("text", "tag", "torch_says"),
    [
        pytest.param("f(Tensor(a!) x) -> Tensor", "inplace", "return must alias", id="no-alias"),
        pytest.param(
            "f(Tensor x) -> Tensor(a)",
            "inplace",
            "first positional argument to be mutable",
            id="not-mut",
        ),
        pytest.param(
            "f(Tensor(a!) x, Tensor(b!) y) -> Tensor(a!)",
            "inplace",
            "only mutate the first",
            id="two",
        ),
        pytest.param("f(Tensor(a!) x) -> Tensor(a)", "inplace", "mutable alias", id="ro-return"),
        pytest.param("f(Tensor x, Tensor(a!) out) -> Tensor(a!)", "out", "keyword-only", id="pos"),
        pytest.param(
            "f(Tensor x, *, int(a!) out) -> int(a!)", "out", "only supports Tensor", id="int"
        ),
        pytest.param(
            "f(Tensor x, *, Tensor(a!) out) -> ()", "out", "must return all mutable", id="none"
        ),
        pytest.param("f(Tensor x) -> Tensor", "out", "at least one mutable argument", id="nothing"),
    ],
)
def test_an_explicit_schema_that_breaks_its_tag_is_refused(
    text: str, tag: Any, torch_says: str
) -> None:
    with pytest.raises(SchemaError, match=torch_says):
        check_tagged_schema(parse_schema(text), tag, "Library.define")


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        pytest.param("f(Tensor(a!) self, Tensor other) -> Tensor(a!)", "inplace", id="inplace"),
        pytest.param("f(Tensor x, *, Tensor(a!) out) -> Tensor(a!)", "out", id="out"),
        pytest.param(
            "f(Tensor x, *, Tensor(a!) v, Tensor(b!) i) -> (Tensor(a!), Tensor(b!))", "out", id="2"
        ),
    ],
)
def test_schemas_that_fit_their_tag_pass(text: str, tag: Any) -> None:
    check_tagged_schema(parse_schema(text), tag, "Library.define")

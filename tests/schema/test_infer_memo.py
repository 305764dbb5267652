"""Inference is memoized per parameter; the memo never mixes up what differs."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pytest

from customop.exceptions import SchemaError
from customop.schema import infer_schema, infer_schema_details, register_annotation


def _text(fn: object, **kwargs: object) -> str:
    return str(infer_schema(fn, mutates_args=kwargs.pop("mutates_args", ()), **kwargs))  # type: ignore[arg-type]


def test_same_parameters_share_arguments() -> None:
    def f(x: np.ndarray, alpha: float = 1.0) -> np.ndarray: ...
    def g(x: np.ndarray, alpha: float = 1.0) -> np.ndarray: ...

    first = infer_schema(f, mutates_args=())
    second = infer_schema(g, mutates_args=())
    assert first == second
    assert first.arguments[0] is second.arguments[0]


@pytest.mark.parametrize(
    ("default", "spelled"),
    [(1.0, "1."), (-0.0, "-0."), (0.0, "0."), (2, "2.")],
    ids=["one", "negative-zero", "zero", "int"],
)
def test_defaults_that_compare_equal_stay_apart(default: float, spelled: str) -> None:
    def f(x: np.ndarray, alpha: float = default) -> np.ndarray: ...

    assert _text(f) == f"(Tensor x, float alpha={spelled}) -> Tensor"


def test_bool_and_int_defaults_stay_apart() -> None:
    # 1 == True: a memo keyed on equality would accept the second.
    def f(x: np.ndarray, n: int = 1) -> np.ndarray: ...
    def g(x: np.ndarray, n: int = True) -> np.ndarray: ...

    assert _text(f) == "(Tensor x, SymInt n=1) -> Tensor"
    with pytest.raises(SchemaError, match="has the default True, which does not fit"):
        _text(g)


def test_literal_order_is_kept() -> None:
    def f(mode: Literal["a", "b"]) -> None: ...
    def g(mode: Literal["b", "a"]) -> None: ...

    assert infer_schema_details(f, mutates_args=()).choices["mode"].values == ("a", "b")
    assert infer_schema_details(g, mutates_args=()).choices["mode"].values == ("b", "a")


def test_mutation_is_part_of_the_key() -> None:
    def f(x: np.ndarray, y: np.ndarray) -> None: ...

    assert _text(f) == "(Tensor x, Tensor y) -> ()"
    assert _text(f, mutates_args=["y"]) == "(Tensor x, Tensor(a1!) y) -> ()"
    assert _text(f, mutates_args=["x"]) == "(Tensor(a0!) x, Tensor y) -> ()"


class Grid:
    """A class no annotation table knows."""


def test_register_annotation_refreshes_the_memo() -> None:
    def f(x: Grid) -> None: ...

    with pytest.raises(SchemaError, match="has no schema type"):
        _text(f)
    remove = register_annotation(Grid, "Tensor")
    try:
        assert _text(f) == "(Tensor x) -> ()"
    finally:
        remove()
    with pytest.raises(SchemaError, match="has no schema type"):
        _text(f)


def test_same_parameters_share_the_argument_tuple() -> None:
    def f(x: np.ndarray, alpha: float = 1.0) -> np.ndarray: ...
    def g(x: np.ndarray, alpha: float = 1.0) -> np.ndarray: ...
    def h(x: np.ndarray, alpha: float = 2.0) -> np.ndarray: ...

    first = infer_schema(f, mutates_args=(), op_name="m::f")
    assert infer_schema(g, mutates_args=(), op_name="m::g").arguments is first.arguments
    other = infer_schema(h, mutates_args=(), op_name="m::h").arguments
    assert other is not first.arguments
    assert str(other[1]) == "float alpha=2."

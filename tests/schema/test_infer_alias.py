"""A type alias (``type Array = ...``; numpy >= 2.5's ``NDArray``) infers as its value."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import numpy.typing as npt
from typing_extensions import TypeAliasType, TypeVar

from customop.schema import infer_schema

T = TypeVar("T", bound=np.generic)
# What numpy 2.5 declares: `type NDArray[ScalarT] = ndarray[tuple[Any, ...], dtype[ScalarT]]`.
Array = TypeAliasType("Array", np.ndarray[tuple[Any, ...], np.dtype[T]], type_params=(T,))
Plain = TypeAliasType("Plain", np.ndarray)


def test_a_generic_alias_of_ndarray_is_a_tensor() -> None:
    def f(x: Array[np.float64], y: Optional[Array[Any]], n: int) -> Array[np.float64]:  # noqa: UP045 -- both spellings
        return x

    assert (
        str(infer_schema(f, mutates_args=(), op_name="ns::f"))
        == "ns::f(Tensor x, Tensor? y, SymInt n) -> Tensor"
    )


def test_a_plain_alias_and_numpy_typing_ndarray() -> None:
    def g(x: Plain, y: list[npt.NDArray[np.float64]]) -> Plain:
        return x

    assert (
        str(infer_schema(g, mutates_args=(), op_name="ns::g"))
        == "ns::g(Tensor x, Tensor[] y) -> Tensor"
    )

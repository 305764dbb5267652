"""Literal and Enum parameters that are optional or lists (issue #11 §2)."""

from __future__ import annotations

import enum
from typing import Literal, Optional

import numpy as np
import pytest

from customop.dispatch import Dispatcher
from customop.library import custom_op


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


def test_optional_literal_takes_none_and_its_values(dispatcher: Dispatcher) -> None:
    @custom_op("choices::opt", mutates_args=(), dispatcher=dispatcher)
    def opt(x: np.ndarray, mode: Optional[Literal["a", "b"]] = None) -> np.ndarray:  # noqa: UP045
        return x + (0 if mode is None else 1)

    x = np.zeros(1)
    assert opt(x).tolist() == [0.0]
    assert opt(x, None).tolist() == [0.0]
    assert opt(x, "a").tolist() == [1.0]
    with pytest.raises(TypeError, match="expects one of 'a', 'b', got str 'z'"):
        opt(x, "z")


def test_list_of_literal_takes_lists_of_its_values(dispatcher: Dispatcher) -> None:
    @custom_op("choices::many", mutates_args=(), dispatcher=dispatcher)
    def many(x: np.ndarray, modes: list[Literal["a", "b"]]) -> np.ndarray:
        return x + len(modes)

    x = np.zeros(1)
    assert many(x, ["a", "b", "a"]).tolist() == [3.0]
    assert many(x, []).tolist() == [0.0]
    for bad in (["c"], None, "a"):
        with pytest.raises(TypeError, match="expects one of 'a', 'b'"):
            many(x, bad)  # type: ignore[arg-type]


def test_optional_enum_and_enum_lists_give_the_kernel_members(dispatcher: Dispatcher) -> None:
    seen: list[object] = []

    @custom_op("choices::paint", mutates_args=(), dispatcher=dispatcher)
    def paint(
        x: np.ndarray,
        color: Optional[Color] = None,  # noqa: UP045
        colors: Optional[list[Color]] = None,  # noqa: UP045
    ) -> np.ndarray:
        seen.append((color, colors))
        return x.copy()

    x = np.zeros(1)
    paint(x)
    paint(x, "red", ["blue", Color.RED])
    paint(x, Color.BLUE, None)
    assert seen == [
        (None, None),
        (Color.RED, [Color.BLUE, Color.RED]),
        (Color.BLUE, None),
    ]

"""A fresh shape environment per test."""

from __future__ import annotations

import pytest

from customop.tensor import ShapeEnv


@pytest.fixture
def env() -> ShapeEnv:
    return ShapeEnv()

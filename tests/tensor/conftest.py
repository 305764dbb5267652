"""Fresh dispatchers with the tensor layer's backends, and a fresh shape environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from customop.dispatch import Dispatcher
from customop.tensor import ShapeEnv, install_backends


@pytest.fixture
def dispatcher() -> Iterator[Dispatcher]:
    """A dispatcher with FakeTensor and the lazy adapters, as customop.dispatcher has."""
    fresh = Dispatcher()
    handle = install_backends(fresh)
    yield fresh
    handle.remove()


@pytest.fixture
def env() -> ShapeEnv:
    return ShapeEnv()

"""A fresh dispatcher with the tensor backends (FakeTensor) installed, per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from customop.dispatch import Dispatcher
from customop.tensor import install_backends


@pytest.fixture
def dispatcher() -> Iterator[Dispatcher]:
    d = Dispatcher()
    with install_backends(d):
        yield d

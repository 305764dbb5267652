"""A fresh dispatcher (and its ops namespace) per test: nothing leaks between tests."""

from __future__ import annotations

import pytest

from customop.dispatch import Dispatcher
from customop.ops import Ops


@pytest.fixture
def dispatcher() -> Dispatcher:
    return Dispatcher()


@pytest.fixture
def ops(dispatcher: Dispatcher) -> Ops:
    return Ops(dispatcher)

"""A fresh dispatcher (and its ops namespace) per test: nothing leaks between tests."""

from __future__ import annotations

import pytest

from customop.dispatch import Dispatcher
from customop.library import Ops
from customop.tensor import install_backends


@pytest.fixture
def dispatcher() -> Dispatcher:
    return Dispatcher()


@pytest.fixture
def ops(dispatcher: Dispatcher) -> Ops:
    return Ops(dispatcher)


@pytest.fixture
def d() -> Dispatcher:
    """A fresh dispatcher that knows torch tensors and fakes, as customop.dispatcher does."""
    dispatcher = Dispatcher()
    install_backends(dispatcher)
    return dispatcher

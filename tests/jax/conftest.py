"""JAX tests: skipped where jax is absent; a fresh dispatcher with the JAX backend per test."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

pytest.importorskip("jax")

import customop.jax  # noqa: E402
from customop.dispatch import Dispatcher  # noqa: E402
from customop.tensor import install_backends  # noqa: E402
from tests.jax.ops import define  # noqa: E402


@pytest.fixture
def dispatcher() -> Iterator[Dispatcher]:
    """A dispatcher with the tensor backends and the JAX backend, as customop.dispatcher has."""
    fresh = Dispatcher()
    backends = install_backends(fresh)
    backend = customop.jax.install(fresh)
    yield fresh
    backend.remove()
    backends.remove()


@pytest.fixture
def ops(dispatcher: Dispatcher) -> Iterator[SimpleNamespace]:
    """The ops of tests/jax/ops.py, defined in the test's dispatcher."""
    found, lib = define(dispatcher)
    yield found
    lib.close()

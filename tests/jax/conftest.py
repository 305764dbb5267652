"""JAX tests: skipped where jax is absent; a fresh dispatcher with the JAX backend per test."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

pytest.importorskip("jax")

import customop.jax
from customop.dispatch import Dispatcher
from customop.tensor import install_backends
from tests.jax.ops import define


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

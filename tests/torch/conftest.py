"""torch tests: skipped where torch is absent; a fresh namespace per test.

torch's registry is process-wide, so each test defines its ops in a namespace
of its own and removes what it registered (the `track` fixture).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from customop.dispatch import Dispatcher, RegistrationHandle  # noqa: E402
from customop.tensor._install import install_backends  # noqa: E402

_counter = itertools.count()


@pytest.fixture
def ns() -> str:
    """A namespace no other test uses, in customop and in torch."""
    return f"cot{next(_counter)}"


@pytest.fixture
def dispatcher() -> Dispatcher:
    """A fresh dispatcher that knows torch tensors (and fakes), as customop.dispatcher does."""
    d = Dispatcher()
    install_backends(d)
    return d


@pytest.fixture
def track() -> Iterator[list[Any]]:
    """Handles, Libraries and @custom_op definitions to remove after the test, newest first."""
    kept: list[Any] = []
    yield kept
    for item in reversed(kept):
        if isinstance(item, RegistrationHandle):
            item.remove()
        else:  # a Library, or a @custom_op's CustomOpDef (closed with its library)
            getattr(item, "_library", item).close()

"""The same fixtures as tests/library: a fresh dispatcher and ops tree per test."""

from tests.library.conftest import dispatcher, ops

__all__ = ["dispatcher", "ops"]

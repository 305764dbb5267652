"""``customop.dask.options(whole=True)``: per-context switches of the Dask backend."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final, NamedTuple

__all__ = ["Options", "current_options", "options"]


class Options(NamedTuple):
    """The Dask backend's switches in the current context.

    ``whole``: ops with neither a ``"pointwise"`` tag nor a partition rule run
    as one task on the whole arrays (rechunked to a single chunk) instead of
    raising.
    """

    whole: bool = False


_DEFAULT: Final = Options()
_CURRENT: Final[ContextVar[Options]] = ContextVar("customop.dask.options", default=_DEFAULT)


def current_options() -> Options:
    """The switches in force in this context."""
    return _CURRENT.get()


@contextmanager
def options(*, whole: bool | None = None) -> Iterator[Options]:
    """Change the Dask backend's switches inside a ``with`` block (context-local).

    Args:
        whole: Run ops that have neither the ``"pointwise"`` tag nor a partition
            rule on a single chunk holding each whole array, instead of
            raising. Meant for small arrays or one-off ops: the whole array
            must fit one worker's memory.

    Returns:
        A context manager that yields the switches in force inside the block.
    """
    current = _CURRENT.get()
    new = current._replace(whole=current.whole if whole is None else bool(whole))
    token = _CURRENT.set(new)
    try:
        yield new
    finally:
        _CURRENT.reset(token)

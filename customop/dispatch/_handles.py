"""`RegistrationHandle`: what every registration returns, and the way to undo it."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import final

from typing_extensions import Self

__all__ = ["RegistrationHandle"]


@final
class RegistrationHandle:
    """Undoes one registration: ``handle.remove()``, or leave a ``with`` block.

    Like PyTorch's ``RegistrationHandleRAII``, but explicit: dropping the handle
    does *not* remove the registration (a Python object's lifetime is not a
    scope), so ``dispatcher.register_impl(...)`` without keeping the handle
    registers for good. ``remove()`` is idempotent and thread-safe.

    ``source`` is ``"file.py:42"`` of the user code that registered, and
    ``description`` says what was registered (``"impl mylib::add CPU"``).
    """

    __slots__ = ("_undo", "description", "source")

    def __init__(self, undo: Callable[[], None] | None, *, description: str, source: str) -> None:
        self._undo = undo
        self.description = description
        self.source = source

    @property
    def active(self) -> bool:
        """False once removed."""
        return self._undo is not None

    def remove(self) -> None:
        """Undo the registration; a second call does nothing."""
        undo = self._undo
        if undo is None:
            return
        try:
            undo()  # idempotent itself: two threads racing here undo once
        finally:
            self._undo = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.remove()

    def __repr__(self) -> str:
        state = "" if self.active else " (removed)"
        return f"<RegistrationHandle {self.description} at {self.source}{state}>"

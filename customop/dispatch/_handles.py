"""`RegistrationHandle`: what every registration returns, and the way to undo it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Protocol, final

from typing_extensions import Self

__all__ = ["RegistrationHandle", "Removable"]


class Removable(Protocol):
    """Anything `RegistrationHandle.group` (or a `Library`) can undo: a handle, or a
    front-end's own undo object whose ``remove()`` runs once."""

    def remove(self) -> None:
        """Undo the registration."""


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

    @classmethod
    def group(
        cls, handles: Iterable[Removable], *, description: str = "", source: str = ""
    ) -> RegistrationHandle:
        """One handle for several registrations: its ``remove()`` removes them newest first.

        Every handle is removed even if one fails; the first error is raised after.

        Args:
            handles: the handles, oldest first (the order they were registered in).
            description: what the group registered; default: the members' descriptions.
            source: where the group comes from; default: the first member's source.

        Returns:
            The group's handle (idempotent, a context manager, like any handle).
        """
        members = tuple(handles)

        def undo() -> None:
            errors: list[BaseException] = []
            for handle in reversed(members):
                try:
                    handle.remove()
                except BaseException as error:  # remove the others, then report
                    errors.append(error)
            if errors:
                raise errors[0]

        shown = description or ", ".join(getattr(h, "description", "") for h in members)
        where = source or getattr(members[0], "source", "") if members else source
        return cls(undo, description=shown, source=where)

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

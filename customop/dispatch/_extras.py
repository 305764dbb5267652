"""Per-op extras: typed facts about an operator that are not kernels.

Like torch's ``SimpleOperatorEntry`` (``torch/_library/simple_registry.py``):
a subsystem declares a slot once, ``FORMULA = Extra[Formula]("autograd
formula", owner="customop.autograd")``, and registers values on an op's
entry through `Dispatcher.register_extra`, which returns a handle. Values
stack newest first per slot, as kernels do, so removing one restores the
value it covered. Readers (``handle.extra(FORMULA)``) take no lock: each
stack is a tuple, replaced whole under the registration lock.

An extra keeps its operator's entry alive as an impl does (an extra may
arrive before the def, like a dangling impl), and every change is announced
to listeners through ``on_operator_changed``, so adapters mirror extras as
they mirror kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, final

if TYPE_CHECKING:
    from customop.dispatch._dispatcher import Dispatcher
    from customop.dispatch._entry import OperatorEntry

__all__ = ["NO_EXTRAS", "Extra", "ExtraRecord", "ExtraRemoved"]

T = TypeVar("T")


def _describe(value: object) -> str:
    return getattr(value, "__name__", None) or repr(value)


@final
class Extra(Generic[T]):
    """A typed per-op slot, declared once by the subsystem that owns it.

    Args:
        name: what dumps call it, e.g. ``"autograd formula"``.
        owner: the package that declares and reads it, e.g. ``"customop.autograd"``.
        describe: how dumps show a value (default: its ``__name__``, else ``repr``).
    """

    __slots__ = ("describe", "name", "owner")

    def __init__(self, name: str, *, owner: str, describe: Callable[[T], str] = _describe) -> None:
        self.name = name
        self.owner = owner
        self.describe = describe

    def __repr__(self) -> str:
        return f"<Extra {self.name!r} of {self.owner}>"


class ExtraRemoved(Protocol):
    """Told when an extra registered with ``then=`` is removed (see `ExtraRecord`)."""

    def extra_removed(self, record: ExtraRecord[Any]) -> None:
        """Called after ``record`` left its op, under the registration lock."""


@final
class ExtraRecord(Generic[T]):
    """One registered value of an extra; calling it (or ``remove()``) unregisters it.

    It is its own undo (no closure beside it): each object an op keeps costs
    time in every full gc collection (see the NOTE in `customop.dispatch._entry`).
    ``then`` hears of the removal, for owners that free more with it.
    """

    __slots__ = ("alive", "debug", "dispatcher", "entry", "extra", "source", "then", "value")

    def __init__(
        self,
        extra: Extra[T],
        value: T,
        source: str,
        debug: str,
        entry: OperatorEntry,
        *,
        then: ExtraRemoved | None = None,
    ) -> None:
        self.extra = extra
        self.value = value
        self.source = source
        self.debug = debug
        self.entry = entry
        self.dispatcher: Dispatcher = entry.dispatcher
        self.then = then
        self.alive = True

    def __call__(self) -> None:
        self.dispatcher._remove_extra(self)

    def remove(self) -> None:
        """Unregister the value (idempotent)."""
        self.dispatcher._remove_extra(self)

    @property
    def label(self) -> str:
        """``value at source (debug)``, as dumps show it."""
        where = f"{self.source} ({self.debug})" if self.debug else self.source
        return f"{self.extra.describe(self.value)} at {where}"


#: The extras of an entry that has none.
NO_EXTRAS: tuple[ExtraRecord[Any], ...] = ()

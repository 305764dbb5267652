"""`Dispatcher.register_extra`: per-op extras (see `customop.dispatch._extras`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from customop.dispatch._changes import tell_changed
from customop.dispatch._extras import Extra, ExtraRecord, ExtraRemoved
from customop.dispatch._handles import RegistrationHandle
from customop.dispatch._kernel import caller_source
from customop.dispatch._local import epoch
from customop.dispatch._registry import op_name

if TYPE_CHECKING:
    from customop.dispatch._entry import OperatorEntry
    from customop.dispatch._guard import RegistryLock
    from customop.dispatch._lookup import NameLike
    from customop.dispatch._registry import OperatorListener, Registration
    from customop.schema import OperatorName

__all__ = ["ExtraRegistry"]

T = TypeVar("T")


class ExtraRegistry:
    """The extras half of `Dispatcher` (its writes hold the same lock)."""

    _lock: RegistryLock
    _listeners: tuple[tuple[Registration, OperatorListener], ...]

    def _obtain(self, name: OperatorName) -> OperatorEntry:
        raise NotImplementedError  # Dispatcher's

    def _cleanup(self, entry: OperatorEntry) -> None:
        raise NotImplementedError  # Dispatcher's

    def register_extra(
        self, op: NameLike, extra: Extra[T], value: T, *, debug: str = "", source: str | None = None
    ) -> RegistrationHandle:
        """Register ``value`` in ``op``'s slot ``extra`` (see `Extra`); newest first.

        An extra may come before the op's def, like an impl, and keeps the
        op's entry alive until its handle is removed. Listeners hear of every
        change through ``on_operator_changed``.

        Args:
            op: the operator: an `OperatorName`, its text, or a handle.
            extra: the slot, as its owning subsystem declared it.
            value: the value to register.
            debug: free text shown beside the source in dumps.
            source: where the registration comes from; default: the caller's file and line.

        Returns:
            A handle whose ``remove()`` restores the value this one covered.
        """
        source = caller_source() if source is None else source
        record = self._add_extra(op, extra, value, source, debug)
        return RegistrationHandle(
            record, description=f"{extra.name} {op_name(op, '')}", source=source
        )

    def _add_extra(
        self,
        op: NameLike,
        extra: Extra[T],
        value: T,
        source: str,
        debug: str = "",
        *,
        then: ExtraRemoved | None = None,
    ) -> ExtraRecord[T]:
        name = op_name(op, "register_extra")
        if not isinstance(extra, Extra):
            raise TypeError(
                f"register_extra({str(name)!r}): {extra!r:.100} is not an Extra. Per-op "
                "extras are slots their subsystem declares once. Pass the Extra it declared, "
                "e.g. customop.dask.BLOCKWISE."
            )
        with self._lock:
            entry = self._obtain(name)
            record = ExtraRecord(extra, value, source, debug, entry, then=then)
            entry.push_extra(record)
            entry.def_and_impl_count += 1
            tell_changed(self._listeners, entry.handle)
            epoch.advance()
        return record

    def _remove_extra(self, record: ExtraRecord[Any]) -> None:
        with self._lock:
            if not record.alive:
                return
            record.alive = False
            entry = record.entry
            entry.pop_extra(record)
            entry.def_and_impl_count -= 1
            tell_changed(self._listeners, entry.handle)
            self._cleanup(entry)
            epoch.advance()
            if record.then is not None:
                record.then.extra_removed(record)

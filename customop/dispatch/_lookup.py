"""The lookup and inspection half of `Dispatcher`: find ops, dump them, snapshot all."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from customop.dispatch._backends import Backends
from customop.dispatch._entry import OperatorEntry
from customop.dispatch._guard import RegistryLock
from customop.dispatch._handles import RegistrationHandle
from customop.dispatch._kernel import KernelRecord
from customop.dispatch._keys import RUNTIME_KEYS, DispatchKey
from customop.dispatch._messages import unknown_operator_error
from customop.dispatch._operator import OperatorHandle
from customop.dispatch._registry import KeyLike, OperatorListener, Registration, op_name
from customop.dispatch._table import Choice
from customop.schema import OperatorName

# NOTE: `_inspect` and its pydantic views (`_models`) are imported where they are
# used: building those model classes is a tenth of `import customop` (issue #12).
if TYPE_CHECKING:
    from customop.dispatch._models import DispatcherSnapshot, KernelInfo, TableEntry

__all__ = ["Lookup", "NameLike"]


#: An operator: its name text (``"ns::op.overload"``), name model, or handle.
NameLike: TypeAlias = str | OperatorName | OperatorHandle


class Lookup(Backends):
    """Reads of the registry. Each takes the lock, so it sees one consistent state."""

    _entries: dict[OperatorName, OperatorEntry]
    _fallbacks: dict[DispatchKey, KernelRecord]
    _libraries: dict[str, Registration]
    _listeners: tuple[tuple[Registration, OperatorListener], ...]

    _autograd_default: RegistrationHandle | None
    _lock: RegistryLock

    @property
    def lock(self) -> RegistryLock:
        """The registration lock (re-entrant): hold it to make several writes one write.

        Calls never take it; registrations do. An adapter holds it while it reads
        an op's registrations and acts on them, so no write comes in between.
        """
        return self._lock

    @property
    def autograd_default(self) -> RegistrationHandle | None:
        """The handle of the default fallthrough fallbacks on the Autograd keys, if made.

        The autograd layer removes it to serve AutogradOther while transforms record.
        """
        return self._autograd_default

    def fallback_source(self, key: KeyLike) -> str | None:
        """Where the fallback on runtime key ``key`` was registered, or None if it has none.

        Args:
            key: a runtime key or its name.

        Returns:
            The fallback's source, e.g. ``"<customop autograd>"``, or None.
        """
        record = self._fallbacks.get(self.parse_key(key, api="fallback_source"))
        return None if record is None else record.source

    # -- lookup and inspection -----------------------------------------------------

    def find_op(self, name: NameLike) -> OperatorHandle | None:
        """The handle of a defined operator, or None (also for ops with only impls).

        A hit reads the registry without a lock; a miss waits for a registration
        in progress in another thread (a redefinition removes and adds the def
        in one write), so None means "not defined", never "being redefined".
        """
        key = op_name(name, "find_op")
        entry = self._entries.get(key)
        if entry is None or entry.schema is None:
            # A miss waits for the registration lock before it answers, so it never
            # decides in the middle of a write (a @custom_op redefinition is one).
            with self._lock:
                entry = self._entries.get(key)
                if entry is None or entry.schema is None:
                    return None
        return entry.handle

    def find_schema_or_throw(self, name: NameLike) -> OperatorHandle:
        """The handle of a defined operator; raises `UnknownOperatorError` naming close matches."""
        api = "find_schema_or_throw"
        key = op_name(name, api)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.schema is not None:
                return entry.handle
            known = [str(n) for n, e in self._entries.items() if e.schema is not None]
            dangling = [r for stack in entry.kernels.values() for r in stack] if entry else []
            raise unknown_operator_error(api, str(key), known, dangling)

    def defined_ops(self) -> tuple[OperatorHandle, ...]:
        """The handles of every defined operator (those with a schema), by name."""
        with self._lock:
            entries = sorted(self._entries.values(), key=lambda e: str(e.name))
            return tuple(e.handle for e in entries if e.schema is not None)

    def find_dangling_impls(self) -> tuple[KernelInfo, ...]:
        """Kernels registered for operators that have no def (yet)."""
        from customop.dispatch import _inspect  # noqa: PLC0415 - see the NOTE

        with self._lock:
            return _inspect.dangling_impls(self)

    def registrations_for_dispatch_key(self, key: KeyLike | None = None) -> tuple[str, ...]:
        """Sorted names of the ops with a kernel registered on ``key`` (any key if None)."""
        dispatch_key = (
            None if key is None else self.parse_key(key, api="registrations_for_dispatch_key")
        )
        with self._lock:
            return tuple(
                sorted(
                    str(name)
                    for name, entry in self._entries.items()
                    if (entry.kernels if dispatch_key is None else dispatch_key in entry.kernels)
                )
            )

    def dump(self, op: NameLike) -> str:
        """The registered state of ``op``: schema and kernels per key, with sources."""
        from customop.dispatch import _inspect  # noqa: PLC0415 - see the NOTE

        with self._lock:
            return _inspect.dump_state(self, self._entry(op, "dump"))

    def dump_table(self, op: NameLike, *, kernels_only: bool = False) -> str:
        """The computed table of ``op``: per runtime key, the kernel and why it was chosen.

        ``kernels_only`` leaves out the keys whose entry is missing or falls through.
        """
        from customop.dispatch import _inspect  # noqa: PLC0415 - see the NOTE

        with self._lock:
            return _inspect.dump_table(
                self, self._entry(op, "dump_table"), kernels_only=kernels_only
            )

    def table_entry(self, op: NameLike, key: KeyLike) -> TableEntry:
        """The computed table entry of ``op`` for runtime ``key``."""
        dispatch_key = self.parse_key(key, api="table_entry", runtime=True)
        from customop.dispatch import _inspect  # noqa: PLC0415 - see the NOTE

        with self._lock:
            return _inspect.table_entry(self, self._entry(op, "table_entry"), dispatch_key)

    def snapshot(self) -> DispatcherSnapshot:
        """The whole registry as a frozen pydantic model (``.model_dump_json()`` for JSON)."""
        from customop.dispatch import _inspect  # noqa: PLC0415 - see the NOTE

        with self._lock:
            return _inspect.snapshot(self)

    def _entry(self, op: NameLike, api: str) -> OperatorEntry:
        if isinstance(op, OperatorHandle) and op.dispatcher is self:
            return op._entry
        name = op_name(op, api)
        entry = self._entries.get(name)
        if entry is None:
            known = [str(n) for n in self._entries]
            raise unknown_operator_error(api, str(name), known, ())
        return entry

    def _served_keys(self, op: OperatorHandle) -> list[tuple[DispatchKey, Choice]]:
        """Runtime keys whose table entry runs a kernel (not missing, not fallthrough)."""
        with self._lock:
            choices = [(key, op._entry.choose(key, self._fallbacks)) for key in RUNTIME_KEYS]
            return [
                (key, choice)
                for key, choice in choices
                if choice[1] not in ("missing", "fallthrough")
            ]

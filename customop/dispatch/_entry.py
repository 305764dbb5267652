"""`OperatorEntry`: one operator's schema, kernel stacks and computed dispatch table.

Entries are mutated only under the dispatcher's lock. What calls read is the
handle's ``_state``, a tuple ``(table, mask, extract)`` that is rebuilt and then
assigned in one store: a call reads ``_state`` once, so it uses the old table
or the new one, never a mix (copy-on-write; PyTorch uses a LeftRight structure
for the same guarantee).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar, final

from customop.dispatch._extract import DEFAULT_BITS, Extractor, make_extractor
from customop.dispatch._extras import NO_EXTRAS, Extra, ExtraRecord
from customop.dispatch._kernel import Kernel, KernelRecord, fallthrough
from customop.dispatch._keys import FULL_BITS, RUNTIME_KEYS, DispatchKey
from customop.dispatch._operator import OperatorHandle, missing_kernel, undefined_kernel
from customop.dispatch._table import Choice, Fallbacks, Stacks, compute_entry, plan, served_by
from customop.schema import FunctionSchema, OperatorName

if TYPE_CHECKING:
    from customop.dispatch._dispatcher import Dispatcher

__all__ = ["CallState", "EmptyState", "OperatorEntry", "empty_state"]

T = TypeVar("T")

#: One table slot: the callable and whether it is boxed (takes ``op, keyset`` first).
Slot: TypeAlias = tuple[Kernel, bool]
#: What a call reads: the table (one slot per runtime key, then the slot for an
#: empty key set at index -1), the non-fallthrough mask, and the key extractor.
CallState: TypeAlias = tuple[tuple[Slot, ...], int, Extractor]

_MISSING: Final[Slot] = (missing_kernel, True)
_UNDEFINED: Final[Slot] = (undefined_kernel, True)


def _default_keys(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return DEFAULT_BITS


# An operator with no schema cannot bind arguments, so every key reports that.
_UNDEFINED_STATE: Final[CallState] = (
    (_UNDEFINED,) * (len(RUNTIME_KEYS) + 1),
    FULL_BITS,
    _default_keys,
)


_INDEX: Final = {key: key.value for key in RUNTIME_KEYS}
_FULL_MASK: Final = (1 << len(RUNTIME_KEYS)) - 1


#: Slots and mask of an operator without kernels: the same for every such operator.
EmptyState: TypeAlias = tuple[tuple[Slot, ...], int]


def empty_state(fallbacks: Fallbacks) -> EmptyState:
    """What an operator without kernels dispatches to: fallbacks, or nothing."""
    slots = [_MISSING] * (len(RUNTIME_KEYS) + 1)
    mask = _store(slots, _FULL_MASK, RUNTIME_KEYS, _slots({}, fallbacks, RUNTIME_KEYS))
    return tuple(slots), mask


def _slots(kernels: Stacks, fallbacks: Fallbacks, keys: tuple[DispatchKey, ...]) -> list[Slot]:
    """The table slot of each of ``keys``, as the precedence rules choose it."""
    slots: list[Slot] = []
    for source, reason in plan(kernels, fallbacks, keys):
        record = served_by(kernels, fallbacks, source, reason)
        slots.append(_MISSING if record is None else record.slot)
    return slots


def _store(slots: list[Slot], mask: int, keys: tuple[DispatchKey, ...], new: list[Slot]) -> int:
    """Put ``new`` in the slots of ``keys``; the mask updated to match."""
    for key, slot in zip(keys, new, strict=True):
        index = _INDEX[key]
        slots[index] = slot
        # The mask keeps only the keys whose kernel is not a fallthrough.
        mask = mask & ~(1 << index) if slot[0] is fallthrough else mask | 1 << index
    return mask


# NOTE: fewer objects per op. Every object an op keeps is visited by each of
# gc's full collections, and a program that registers n ops runs collections
# over all of them every n/4 registrations: the per-op cost of registering
# grows with the registry through them (issue #12). So an entry keeps its
# slots and kernel stacks as tuples (replaced, never mutated: no list beside
# them), and is itself the extractor until the first call builds the real one.


@final
class OperatorEntry:
    """One operator's registrations; see the module docstring for the threading rule."""

    __slots__ = (
        "__weakref__",
        "def_and_impl_count",
        "def_count",
        "def_debug",
        "def_source",
        "dispatcher",
        "extract",
        "extras",
        "handle",
        "kernel_hint",
        "kernels",
        "mask",
        "name",
        "schema",
        "slots",
        "tags",
    )

    def __init__(self, name: OperatorName, dispatcher: Dispatcher) -> None:
        self.name = name
        self.dispatcher = dispatcher
        self.schema: FunctionSchema | None = None
        self.def_source = ""
        self.def_debug = ""
        # How the front-end that defined the op registers a kernel, for error messages
        # (``@custom_op``: "<fn>.register_kernel('cpu', fn)"); "" means register_impl.
        self.kernel_hint = ""
        self.tags: tuple[str, ...] = ()
        self.extract: Extractor = _default_keys
        self.kernels: dict[DispatchKey, tuple[KernelRecord, ...]] = {}
        # Every extra's records in one tuple, newest first (few per op: a scan is cheap,
        # and one tuple is one object where a dict of stacks would be several).
        self.extras: tuple[ExtraRecord[Any], ...] = NO_EXTRAS
        self.def_count = 0
        self.def_and_impl_count = 0
        # slots[i] serves RUNTIME_KEYS[i]; the extra last slot serves an empty key set.
        self.slots: tuple[Slot, ...] = (_MISSING,) * (len(RUNTIME_KEYS) + 1)
        #: Bit i set: slots[i] is not a fallthrough (the last slot has no bit).
        self.mask = _FULL_MASK
        self.handle = OperatorHandle(self, _UNDEFINED_STATE)

    # -- reading -----------------------------------------------------------------

    @property
    def def_where(self) -> str:
        """Where the def came from, as errors quote it."""
        return f"{self.def_source} ({self.def_debug})" if self.def_debug else self.def_source

    def choose(self, key: DispatchKey, fallbacks: Fallbacks) -> Choice:
        return compute_entry(self.kernels, fallbacks, key)

    def top(self, key: DispatchKey) -> KernelRecord | None:
        stack = self.kernels.get(key)
        return stack[0] if stack else None

    # -- writing (lock held) -----------------------------------------------------

    def set_schema(
        self, schema: FunctionSchema, source: str, debug: str, tags: tuple[str, ...]
    ) -> None:
        self.schema = schema
        self.def_source, self.def_debug, self.tags = source, debug, tags
        # NOTE: the real extractor is built at the first call that needs it, then
        # kept while the schema stands: building it is a fifth of a def's cost,
        # and ops made by @custom_op mostly dispatch from their call cache.
        # Until then the entry itself is the extractor (see `__call__`).
        self.extract = self

    def built_extractor(self) -> Extractor:
        """The extractor for the current schema, built (and published) if need be."""
        with self.dispatcher._lock:
            extract = self.extract
            if extract is self and self.schema is not None:
                registry = self.dispatcher._backends
                extract = self.extract = make_extractor(self.schema, registry, str(self.name))
                self.publish()
        return extract

    def clear_schema(self) -> None:
        self.schema = None
        self.def_source, self.def_debug, self.tags = "", "", ()
        self.kernel_hint = ""
        self.extract = _default_keys

    def push(self, record: KernelRecord) -> None:
        self.kernels[record.key] = (record, *self.kernels.get(record.key, ()))

    def pop(self, record: KernelRecord) -> None:
        # Identity, not ==: a stack may hold equal records of one kernel.
        stack = tuple(r for r in self.kernels[record.key] if r is not record)
        if stack:
            self.kernels[record.key] = stack
        else:
            del self.kernels[record.key]

    def extra(self, extra: Extra[T]) -> ExtraRecord[T] | None:
        """The newest live record of ``extra``."""
        for record in self.extras:
            if record.extra is extra:
                return record
        return None

    def push_extra(self, record: ExtraRecord[Any]) -> None:
        self.extras = (record, *self.extras)

    def pop_extra(self, record: ExtraRecord[Any]) -> None:
        self.extras = tuple(r for r in self.extras if r is not record)

    def reset(self, empty: EmptyState) -> None:
        """Take the slots of an operator without kernels (see `empty_state`), and publish."""
        self.slots, self.mask = empty  # shared by every entry until a kernel comes
        self.publish()

    def rebuild_keys(self, keys: Iterable[DispatchKey], fallbacks: Fallbacks) -> None:
        """Recompute the slots of ``keys`` (those a change can affect), then publish."""
        keys = tuple(keys)
        if keys:  # a def without kernels changes no slot: it only publishes its schema
            slots = list(self.slots)
            self.mask = _store(slots, self.mask, keys, _slots(self.kernels, fallbacks, keys))
            self.slots = tuple(slots)
        self.publish()

    def publish(self) -> None:
        if self.schema is None:
            self.handle._state = _UNDEFINED_STATE
            return
        self.handle._state = (self.slots, self.mask, self.extract)

    def __call__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
        """The extractor until the first call builds the real one: build it, then extract."""
        return self.built_extractor()(args, kwargs)

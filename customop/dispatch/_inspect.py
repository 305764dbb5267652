"""Text dumps and snapshot models of the registry. Callers hold the dispatcher's lock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from customop.dispatch._entry import OperatorEntry
from customop.dispatch._kernel import KernelRecord
from customop.dispatch._keys import RUNTIME_KEYS, DispatchKey, DispatchKeySet
from customop.dispatch._models import (
    ArrayTypeInfo,
    DispatcherSnapshot,
    FallbackInfo,
    KernelInfo,
    LibraryInfo,
    OperatorInfo,
    TableEntry,
)

if TYPE_CHECKING:
    from customop.dispatch._lookup import Lookup as Dispatcher

__all__ = [
    "dangling_impls",
    "dump_state",
    "dump_table",
    "kernel_infos",
    "snapshot",
    "table_entries",
    "table_entry",
]


def kernel_infos(d: Dispatcher, entry: OperatorEntry) -> Iterator[KernelInfo]:
    """Every kernel of the op, by key in priority order, newest first per key."""
    for key in DispatchKey:
        for position, record in enumerate(entry.kernels.get(key, ())):
            yield _kernel_info(d, record, active=position == 0)


def _kernel_info(d: Dispatcher, record: KernelRecord, *, active: bool) -> KernelInfo:
    return KernelInfo(
        op=record.op,
        key=d.key_name(record.key),
        kernel=record.name,
        source=record.source,
        debug=record.debug,
        boxed=record.boxed,
        active=active,
    )


def table_entry(d: Dispatcher, entry: OperatorEntry, key: DispatchKey) -> TableEntry:
    record, reason = entry.choose(key, d._fallbacks)
    return TableEntry(
        key=d.key_name(key),
        reason=reason,
        kernel=None if record is None else record.name,
        source=None if record is None else record.where,
    )


def table_entries(d: Dispatcher, entry: OperatorEntry) -> Iterator[TableEntry]:
    return (table_entry(d, entry, key) for key in RUNTIME_KEYS)


def dump_state(d: Dispatcher, entry: OperatorEntry) -> str:
    """The registered (not computed) state, like PyTorch's ``OperatorEntry::dumpState``."""
    lines = [f"name: {entry.name}"]
    if entry.schema is None:
        lines.append("schema: (none)")
    else:
        lines.append(f"schema: {entry.schema}")
        lines.append(f"source: {entry.def_where}")
        if entry.tags:
            lines.append(f"tags: {', '.join(entry.tags)}")
    for key in DispatchKey:
        for position, record in enumerate(entry.kernels.get(key, ())):
            alias = "[alias]" if key.is_alias else ""
            inactive = " (inactive)" if position else ""
            boxed = " (boxed)" if record.boxed else ""
            lines.append(f"{d.key_name(key)}{alias}{inactive}: {record.label}{boxed}")
    seen: set[int] = set()
    for extra_record in entry.extras:
        inactive = " (inactive)" if id(extra_record.extra) in seen else ""
        seen.add(id(extra_record.extra))
        lines.append(f"extra {extra_record.extra.name}{inactive}: {extra_record.label}")
    return "\n".join(lines) + "\n"


def dump_table(d: Dispatcher, entry: OperatorEntry, *, kernels_only: bool) -> str:
    """One line per runtime key: ``Key: kernel at source [reason]``."""
    width = max(len(d.key_name(key)) for key in RUNTIME_KEYS) + 1
    lines = []
    for info in table_entries(d, entry):
        if kernels_only and info.reason in ("missing", "fallthrough"):
            continue
        label = "(no kernel)" if info.kernel is None else f"{info.kernel} at {info.source}"
        lines.append(f"{info.key + ':':<{width}} {label} [{info.reason}]")
    return "\n".join(lines) + "\n" if lines else ""


def dangling_impls(d: Dispatcher) -> tuple[KernelInfo, ...]:
    return tuple(
        info
        for entry in sorted(d._entries.values(), key=lambda e: str(e.name))
        if entry.schema is None
        for info in kernel_infos(d, entry)
    )


def _operator_info(d: Dispatcher, entry: OperatorEntry) -> OperatorInfo:
    return OperatorInfo(
        name=str(entry.name),
        schema_text=None if entry.schema is None else str(entry.schema),
        source=entry.def_source or None,
        debug=entry.def_debug,
        tags=entry.tags,
        def_count=entry.def_count,
        def_and_impl_count=entry.def_and_impl_count,
        kernels=tuple(kernel_infos(d, entry)),
        table=tuple(table_entries(d, entry)),
    )


def _keys_text(keys: object) -> tuple[str, ...] | None:
    return tuple(key.name for key in keys) if isinstance(keys, DispatchKeySet) else None


def snapshot(d: Dispatcher) -> DispatcherSnapshot:
    entries = sorted(d._entries.values(), key=lambda e: str(e.name))
    fallbacks = sorted(d._fallbacks.values(), key=lambda r: r.key.value)
    arrays = sorted(d._array_types.items(), key=lambda item: _type_name(item[0]))
    return DispatcherSnapshot(
        operators=tuple(_operator_info(d, entry) for entry in entries),
        fallbacks=tuple(
            FallbackInfo(key=d.key_name(r.key), kernel=r.name, source=r.source, debug=r.debug)
            for r in fallbacks
        ),
        libraries=tuple(
            LibraryInfo(namespace=ns, source=r.source, debug=r.debug)
            for ns, r in sorted(d._libraries.items())
        ),
        array_types=tuple(
            ArrayTypeInfo(type=_type_name(t), keys=_keys_text(r.value), source=r.source)
            for t, r in arrays
        ),
        backend_names={key.name: str(r.value) for key, r in sorted(d._names.items(), key=_by_key)},
        dangling_impls=dangling_impls(d),
        listeners=len(d._listeners),
    )


def _by_key(item: tuple[DispatchKey, object]) -> int:
    return item[0].value


def _type_name(tp: type | str) -> str:
    return tp if isinstance(tp, str) else f"{tp.__module__}.{tp.__qualname__}"

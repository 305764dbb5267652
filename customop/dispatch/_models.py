"""Read-only views of the registry: frozen pydantic models, JSON-serialisable."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from customop.dispatch._table import Reason

__all__ = [
    "ArrayTypeInfo",
    "DispatcherSnapshot",
    "FallbackInfo",
    "KernelInfo",
    "LibraryInfo",
    "OperatorInfo",
    "TableEntry",
]


class _View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # import time


class KernelInfo(_View):
    """One registered kernel. ``active`` is False for kernels overridden by a newer one."""

    op: str
    key: str
    kernel: str
    source: str
    debug: str = ""
    boxed: bool = False
    active: bool = True


class TableEntry(_View):
    """One computed dispatch-table entry: the kernel a runtime key runs, and why."""

    key: str
    reason: Reason
    kernel: str | None = None
    source: str | None = None


class FallbackInfo(_View):
    """A backend fallback in a ``Dispatcher.snapshot()``: its key, kernel, source and debug text."""

    key: str
    kernel: str
    source: str
    debug: str = ""


class LibraryInfo(_View):
    """The DEF library that owns a namespace."""

    namespace: str
    source: str
    debug: str = ""


class ArrayTypeInfo(_View):
    """An array type the dispatcher maps to keys; ``keys`` is None when computed per instance."""

    type: str
    keys: tuple[str, ...] | None
    source: str


class OperatorInfo(_View):
    """One operator in a ``Dispatcher.snapshot()``: name, schema, source, tags, kernels."""

    name: str
    schema_text: str | None
    source: str | None = None
    debug: str = ""
    tags: tuple[str, ...] = ()
    def_count: int
    def_and_impl_count: int
    kernels: tuple[KernelInfo, ...]
    table: tuple[TableEntry, ...]


class DispatcherSnapshot(_View):
    """The whole registry at one moment (taken under the registration lock)."""

    operators: tuple[OperatorInfo, ...]
    fallbacks: tuple[FallbackInfo, ...]
    libraries: tuple[LibraryInfo, ...]
    array_types: tuple[ArrayTypeInfo, ...]
    backend_names: dict[str, str]
    dangling_impls: tuple[KernelInfo, ...]
    listeners: int

"""Reading a compiled library's registration records through its plain C entry point.

Every library built against ``<customop/library.h>`` exports
``customop_library_records()``, returning the records its ``CUSTOMOP_LIBRARY*``
blocks filled during static initialisation. Reading them needs only ctypes:
no compiler, no TVM-FFI (``customop dump --library`` uses this alone).
"""

from __future__ import annotations

import ctypes
import os
from enum import IntEnum
from pathlib import Path
from typing import Final, NamedTuple

from customop.exceptions import RegistrationError

__all__ = ["ABI_VERSION", "BlockKind", "LibraryRecords", "Record", "RecordKind", "read_records"]

#: CUSTOMOP_ABI_VERSION of the header this module reads.
ABI_VERSION: Final = 1
_ENTRY: Final = "customop_library_records"
_FLAG_KEEP_GIL: Final = 1
_FLAG_CONTIGUOUS: Final = 2
_FLAG_OUT_FROM_FAKE: Final = 4


class RecordKind(IntEnum):
    BLOCK = 0
    DEF = 1
    IMPL = 2


class BlockKind(IntEnum):
    DEF = 0
    FRAGMENT = 1
    IMPL = 2


class _CRecord(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int32),
        ("block", ctypes.c_int32),
        ("ns", ctypes.c_char_p),
        ("key", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("schema", ctypes.c_char_p),
        ("inferred", ctypes.c_char_p),
        ("kernel", ctypes.c_int32),
        ("flags", ctypes.c_int32),
        ("file", ctypes.c_char_p),
        ("line", ctypes.c_int32),
    ]


class _CRegistry(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_uint32),
        ("count", ctypes.c_uint32),
        ("records", ctypes.POINTER(_CRecord)),
        ("error", ctypes.c_char_p),
    ]


class Record(NamedTuple):
    """One registration: a block, a def or an impl, with where it was written."""

    kind: RecordKind
    block: BlockKind
    ns: str
    key: str
    name: str  # the op within ``ns`` ("add", "add.out"); "" for blocks
    schema: str  # as written; "" when inferred from the C++ type
    inferred: str  # from the kernel's C++ type; "" without a kernel
    kernel: int  # -1 without a kernel
    flags: int
    file: str
    line: int

    @property
    def source(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def qualified(self) -> str:
        """``ns::name`` of the op (of the schema's name when the name was not given)."""
        name = self.name or self.schema.split("(", 1)[0].strip()
        return f"{self.ns}::{name}"

    @property
    def keep_gil(self) -> bool:
        return bool(self.flags & _FLAG_KEEP_GIL)

    @property
    def contiguous(self) -> bool:
        return bool(self.flags & _FLAG_CONTIGUOUS)

    @property
    def out_from_fake(self) -> bool:
        """``.out_from_fake()``: customop allocates the outputs from the op's fake impl."""
        return bool(self.flags & _FLAG_OUT_FROM_FAKE)


class LibraryRecords(NamedTuple):
    path: Path
    records: tuple[Record, ...]


def read_records(path: str | os.PathLike[str], *, api: str = "load_library") -> LibraryRecords:
    """Open the shared library at ``path`` and read its records (validating nothing else)."""
    where = Path(path).expanduser().resolve()
    if not where.is_file():
        raise FileNotFoundError(
            f"{api}: {str(path)!r} is not a file. A compiled library is a shared object "
            "(.so) built with customop.cpp.load or your build system. Pass its path."
        )
    try:
        library = ctypes.CDLL(str(where), mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as error:
        raise RegistrationError(_open_error(api, where, str(error))) from None
    try:
        entry = getattr(library, _ENTRY)
    except AttributeError:
        raise RegistrationError(
            f"{api}: {where.name} is not a customop library (it exports no {_ENTRY}()). "
            "customop reads a library's ops from the records its CUSTOMOP_LIBRARY blocks "
            "fill. Build it with #include <customop/library.h> and at least one "
            "CUSTOMOP_LIBRARY / CUSTOMOP_LIBRARY_IMPL block."
        ) from None
    entry.restype = ctypes.POINTER(_CRegistry)
    registry = entry().contents
    if registry.abi_version != ABI_VERSION:
        raise RegistrationError(
            f"{api}: {where.name} was built with customop's C++ header version "
            f"{registry.abi_version}, this customop reads version {ABI_VERSION}. The record "
            "layout differs between versions. Rebuild the library against "
            "customop.cpp.include_path() of this installation."
        )
    if registry.error:
        raise RegistrationError(
            f"{api}: a block of {where.name} threw while the library loaded: "
            f"{registry.error.decode()}. A block that fails leaves its records incomplete. "
            "Fix the block (its def and impl calls) and rebuild."
        )
    records = tuple(_record(registry.records[i]) for i in range(registry.count))
    return LibraryRecords(where, records)


def _record(raw: _CRecord) -> Record:
    def text(value: bytes | None) -> str:
        return (value or b"").decode()

    return Record(
        RecordKind(raw.kind),
        BlockKind(raw.block),
        text(raw.ns),
        text(raw.key),
        text(raw.name),
        text(raw.schema),
        text(raw.inferred),
        raw.kernel,
        raw.flags,
        text(raw.file),
        raw.line,
    )


def _open_error(api: str, where: Path, message: str) -> str:
    if "undefined symbol" in message:
        symbol = message.rsplit("undefined symbol:", 1)[-1].strip()
        return (
            f"{api}: {where.name} needs the symbol {symbol!r}, which no loaded library "
            "defines. A function was declared but its definition was not compiled or linked "
            "in. Add the source that defines it to the build, or link its library "
            "(extra_ldflags=['-l...'])."
        )
    return (
        f"{api}: cannot open {where.name}: {message}. The dynamic loader refused it. "
        "Check that it is a shared object built for this machine."
    )

"""`kernel`: one kernel of a compiled library, as a Python kernel, registering nothing.

What a codegen ``dispatch:`` entry names (``CPU: cpp:mykernels._kernels::add``):
the generated module defines the op from YAML, then registers this kernel for
it with ``Library.impl``. The library is a shared object found by path, or by
the dotted name of the extension module it was built as (``find_spec``; the
library is never imported as a Python module).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from customop.cpp._load import kernel_of, loaded_functions
from customop.cpp._records import Record, RecordKind, read_records
from customop.dispatch import Dispatcher
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import RegistrationError

__all__ = ["kernel", "library_path"]

_API = "customop.cpp.kernel"


def kernel(
    library: str | os.PathLike[str],
    name: str,
    *,
    op: str | None = None,
    key: str = "CPU",
    relative_to: str | os.PathLike[str] | None = None,
    dispatcher: Dispatcher | None = None,
) -> Callable[..., Any]:
    """The kernel ``name`` of ``library`` at ``key``, for ``Library.impl``; registers nothing.

    Args:
        library: the shared object's path, or the dotted name of the extension module
            it was built as (``"mykernels._kernels"``).
        name: the op's name in the library's ``m.impl`` / ``m.def`` (``"add"``, ``"add.out"``).
        op: the op the kernel will serve (``"mylib::add"``), defined already; its schema
            is checked against the kernel's C++ type. Default: the library's ``ns::name``.
        key: the kernel's dispatch key in the library.
        relative_to: a file whose folder a relative ``library`` path starts from (a
            generated module passes its ``__file__``).
        dispatcher: where ``op`` is defined; default: ``customop.dispatcher``.

    Returns:
        The kernel, as `load_library` would register it.

    Raises:
        RegistrationError: the library, the kernel or the op is not found, or the
            kernel's C++ type does not fit the op's schema.
    """
    target = default_dispatcher if dispatcher is None else dispatcher
    import tvm_ffi  # noqa: F401, PLC0415 -- satisfies the library's libtvm_ffi.so by name

    found = read_records(library_path(library, relative_to), api=_API)
    record = _record(found.records, name, key, found.path.name)
    qualified = op or record.qualified
    handle = target.find_op(qualified)
    if handle is None:
        raise RegistrationError(
            f"{_API}: op {qualified!r} is not defined. The kernel is checked against its "
            f"op's schema. Define the op first (a DEF library, or the YAML's func)."
        )
    functions = loaded_functions(found.path, found.records)
    return kernel_of(record, (handle.schema, "the op's def"), functions, target)


def library_path(
    library: str | os.PathLike[str], relative_to: str | os.PathLike[str] | None
) -> Path:
    """A library given as a path (relative to ``relative_to``'s folder) or a module name."""
    text = os.fspath(library)
    if "/" in text or os.sep in text or text.endswith((".so", ".dylib", ".dll")):
        path = Path(text).expanduser()
        if not path.is_absolute() and relative_to is not None:
            path = Path(relative_to).parent / path
        return path
    try:
        spec = importlib.util.find_spec(text)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin or not spec.origin.endswith((".so", ".pyd")):
        raise RegistrationError(
            f"{_API}: library {text!r} is neither a path nor an extension module on sys.path. "
            "A library is found by its file, or by the dotted name it was built as. Pass "
            "'pkg._kernels' (a setuptools Extension) or a path ending in .so."
        )
    return Path(spec.origin)


def _record(records: tuple[Record, ...], name: str, key: str, library: str) -> Record:
    kernels = [r for r in records if r.kernel >= 0 and r.kind is not RecordKind.BLOCK]
    for record in kernels:
        if record.qualified.split("::", 1)[1] == name and record.key == key:
            return record
    have = ", ".join(f"{r.qualified.split('::', 1)[1]} ({r.key})" for r in kernels) or "none"
    raise RegistrationError(
        f"{_API}: {library} has no kernel {name!r} at {key}. A kernel is named as its "
        f"m.impl / m.def names it, at its block's dispatch key. Its kernels: {have}."
    )

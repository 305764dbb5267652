"""`load_library`: register a compiled library's defs and impls, all through public APIs.

Validate first (parse every schema, check every kernel's C++ type against the
schema of its op), then register: the blocks as libraries (one DEF block per
namespace, enforced by the dispatcher across C++ and Python), the defs, then
the impls, each with its C++ ``file:line`` as source. A failure removes what
was registered. A library stays loaded for the life of the process (code may
still be referenced by call caches), as with ``torch.ops.load_library``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from customop.cpp._check import check_kernel_schema, parse_record_schema
from customop.cpp._destination import destination_kernel
from customop.cpp._kernel import python_kernel
from customop.cpp._records import BlockKind, Record, RecordKind, read_records
from customop.dispatch import Dispatcher, DispatchKey, LibraryKind, RegistrationHandle
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import RegistrationError
from customop.schema import FunctionSchema

__all__ = ["kernel_of", "load_library", "loaded_functions"]

KeyLike = DispatchKey | str
_KINDS: dict[BlockKind, LibraryKind] = {
    BlockKind.DEF: "DEF",
    BlockKind.FRAGMENT: "FRAGMENT",
    BlockKind.IMPL: "IMPL",
}


class _Loaded(NamedTuple):
    """A library's code, kept for the process: its TVM-FFI functions by kernel index."""

    stamp: tuple[int, int, int]
    functions: dict[int, Any]
    module: Any


_LOADED: dict[Path, _Loaded] = {}
_LOCK = threading.Lock()


class _Impl(NamedTuple):
    """A kernel to register: its record, its C++ type's schema, its op's (when known),
    and whether it takes its outputs (destination passing)."""

    record: Record
    inferred: FunctionSchema
    declared: FunctionSchema | None
    destination: bool


class _Plan(NamedTuple):
    """What one load registers, decided before anything is."""

    blocks: list[Record]
    defs: list[tuple[Record, FunctionSchema, _Impl | None]]
    impls: list[_Impl]


def load_library(
    path: str | os.PathLike[str], *, dispatcher: Dispatcher | None = None
) -> RegistrationHandle:
    """Register every def and impl of the compiled library at ``path``.

    The library is a shared object built against ``<customop/library.h>``
    (``customop.cpp.load`` builds one). Its ops become ordinary customop ops
    (``customop.ops.ns.name``), with sources pointing at the C++ ``file:line``.

    Args:
        path: the shared object.
        dispatcher: where to register; default: ``customop.dispatcher``.

    Returns:
        One handle whose ``remove()`` takes every registration of this load away.

    Raises:
        FileNotFoundError: ``path`` is not a file.
        RegistrationError: not a customop library, a missing symbol, a schema that
            does not parse, a kernel whose C++ type does not fit its op's schema, or
            a conflict with what is registered (naming both sources).
    """
    target = default_dispatcher if dispatcher is None else dispatcher
    # TVM-FFI first: its libtvm_ffi.so, loaded, satisfies the library's dependency on it by
    # name, so a wheel's library needs no rpath into the build machine's site-packages.
    import tvm_ffi  # noqa: F401, PLC0415 -- the foundation loads with the first library

    library = read_records(path)
    plan = _plan(library.records, target)
    functions = loaded_functions(library.path, library.records)
    handles: list[RegistrationHandle] = []
    try:
        for record in plan.blocks:
            kind = _KINDS[record.block]
            handles.append(target.register_library(record.ns, kind, source=record.source))
        for record, schema, impl in plan.defs:
            kernels: dict[KeyLike, Callable[..., Any]] = {}
            if impl is not None:
                kernels[record.key] = _kernel(impl, functions, target)
            handles.append(target.register_def(schema, source=record.source, kernels=kernels))
        for impl in plan.impls:
            kernel = _kernel(impl, functions, target)
            record = impl.record
            handles.append(
                target.register_impl(record.qualified, record.key, kernel, source=record.source)
            )
    except BaseException:
        RegistrationHandle.group(handles).remove()
        raise
    return RegistrationHandle.group(
        handles, description=f"library {library.path.name}", source=str(library.path)
    )


def _plan(records: tuple[Record, ...], target: Dispatcher) -> _Plan:
    blocks = [r for r in records if r.kind is RecordKind.BLOCK]
    defs: list[tuple[Record, FunctionSchema, _Impl | None]] = []
    for record in records:
        if record.kind is RecordKind.DEF:
            schema = _def_schema(record)
            impl = _checked(record, (schema, record.source)) if record.kernel >= 0 else None
            defs.append((record, schema, impl))
    here = {str(schema.name): (schema, record.source) for record, schema, _ in defs}
    impls = [
        _checked(record, here.get(record.qualified) or _defined(target, record.qualified))
        for record in records
        if record.kind is RecordKind.IMPL
    ]
    return _Plan(blocks, defs, impls)


def _checked(record: Record, declared: tuple[FunctionSchema, str] | None) -> _Impl:
    """The kernel of ``record``, its C++ type checked against its op's schema (when known)."""
    inferred = parse_record_schema(record.ns, record.inferred, record.source)
    if declared is None and record.out_from_fake:
        raise RegistrationError(
            f"load_library: the .out_from_fake() kernel for {record.qualified} at "
            f"{record.source} is loaded before its op is defined. Its outputs are allocated "
            "from the op's schema and fake impl, so they must be known first. Define the op "
            "(a CUSTOMOP_LIBRARY block or a Python def) before loading this library."
        )
    if declared is None:  # a dangling impl: checked by nothing until its def comes
        return _Impl(record, inferred, None, False)
    schema, source = declared
    if not record.schema and record.kind is RecordKind.DEF:  # inferred from this very type
        return _Impl(record, inferred, schema, False)
    destination = check_kernel_schema(
        schema, source, inferred, record.source, out_from_fake=record.out_from_fake
    )
    return _Impl(record, inferred, schema, destination)


def _def_schema(record: Record) -> FunctionSchema:
    return parse_record_schema(record.ns, record.schema or record.inferred, record.source)


def _defined(target: Dispatcher, name: str) -> tuple[FunctionSchema, str] | None:
    """The schema and def source of an op defined already (a Python def, another library)."""
    op = target.find_op(name)
    if op is None:
        return None
    # Load time only: the def's source is public through a snapshot.
    sources = [info.source for info in target.snapshot().operators if info.name == name]
    return op.schema, (sources[0] if sources and sources[0] else "an earlier def")


def loaded_functions(path: Path, records: tuple[Record, ...]) -> dict[int, Any]:
    """The library's TVM-FFI kernel functions, loading its code once per process."""
    status = path.stat()
    stamp = (status.st_dev, status.st_ino, status.st_mtime_ns)
    with _LOCK:
        loaded = _LOADED.get(path)
        if loaded is not None and loaded.stamp != stamp:
            raise RegistrationError(
                f"load_library: {path.name} changed on disk since this process loaded it. "
                "A loaded shared object stays in the process; the loader would hand back the "
                "old code. Build the new version under a new file name (customop.cpp.load "
                "does), or restart the process."
            )
        if loaded is None:
            import tvm_ffi  # noqa: PLC0415 -- the foundation loads with the first library

            module = tvm_ffi.load_module(str(path))
            loaded = _Loaded(stamp, {}, module)
            _LOADED[path] = loaded
        factory = loaded.module.get_function("customop_kernel")
        for record in records:
            if record.kernel >= 0 and record.kernel not in loaded.functions:
                function = factory(record.kernel)
                function.release_gil = not record.keep_gil
                loaded.functions[record.kernel] = function
        return loaded.functions


def kernel_of(
    record: Record,
    declared: tuple[FunctionSchema, str],
    functions: dict[int, Any],
    target: Dispatcher,
) -> Callable[..., Any]:
    """The kernel of ``record`` for the op of schema ``declared`` (defined at ``[1]``),
    its C++ type checked against that schema, whatever the library's own def says."""
    inferred = parse_record_schema(record.ns, record.inferred, record.source)
    schema, source = declared
    destination = check_kernel_schema(
        schema, source, inferred, record.source, out_from_fake=record.out_from_fake
    )
    return _kernel(_Impl(record, inferred, schema, destination), functions, target)


def _kernel(impl: _Impl, functions: dict[int, Any], target: Dispatcher) -> Callable[..., Any]:
    record, inferred, declared = impl.record, impl.inferred, impl.declared
    function = functions[record.kernel]
    op = str(declared.name) if declared else record.qualified
    kwonly = [a.name for a in declared.arguments if a.kwarg_only] if declared else []
    names = [a.name for a in (declared or inferred).arguments]
    if not impl.destination:
        return python_kernel(
            function, op=op, source=record.source, inferred=inferred,
            kwonly=kwonly, names=names,
        )  # fmt: skip
    outputs = len(inferred.arguments) - len(names)  # declared: _checked refuses dangling ones
    returns = [r.name or f"output {i}" for i, r in enumerate((declared or inferred).returns)]
    return destination_kernel(
        function, op=op, source=record.source, inferred=inferred,
        kwonly=kwonly, names=[*names, *returns], outputs=outputs, dispatcher=target,
    )  # fmt: skip

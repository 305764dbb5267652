"""Ops travel to Dask workers by reference: a name and the module that defines it.

A task's function holds the op as it was when its graph was built while it
stays in this process (threaded scheduler): a redefinition, a kernel override
or the removal of the op changes no graph built before it, and each
definition's tasks have keys of their own (`OpRef.token`), so two graphs of
two definitions of one name never share a task. Pickled for a worker in another process, it becomes
``(op name, module)``: the worker imports the module, which registers the op
in its ``customop.dispatcher``, and finds the op by name. Kernels never
travel by value, so a worker runs the kernel its own install of the module
defines. An op from a script (``__main__``) is found by running the script
on the worker under another name, as ``multiprocessing``'s spawn does, so its
cluster code must sit under ``if __name__ == "__main__":``.
"""

from __future__ import annotations

import importlib
import os
import runpy
import sys
from typing import Any, Final, NoReturn

from customop.dispatch import DispatchKey, OperatorHandle, RegistryLock
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import UnknownOperatorError

__all__ = ["OpRef", "defining_module"]

_KERNEL_KEYS: Final = (
    DispatchKey.CPU,
    DispatchKey.CompositeExplicitAutograd,
    DispatchKey.CompositeImplicitAutograd,
    DispatchKey.Fake,
)
_lock = RegistryLock()
_found: dict[str, OperatorHandle] = {}  # per worker process: op name -> handle
_scripts: set[str] = set()  # scripts already run in this process


def defining_module(op: OperatorHandle) -> str:
    """The module whose kernels define ``op`` (its CPU, composite or fake kernel's)."""
    for key in _KERNEL_KEYS:
        fn = op.registered_kernel(key)
        if fn is not None:
            module = getattr(getattr(fn, "__wrapped__", fn), "__module__", None)
            if isinstance(module, str) and not module.startswith("customop."):
                return module
    return ""


class OpRef:
    """A customop op as a picklable callable: ``ref(*args, **kwargs)`` calls the op."""

    __slots__ = ("_handle", "module", "name", "script")

    def __init__(self, handle: OperatorHandle | None, name: str, module: str, script: str) -> None:
        self._handle = handle
        self.name = name
        self.module = module
        self.script = script

    @classmethod
    def of(cls, op: OperatorHandle) -> OpRef:
        """A reference to ``op`` as it is now, that remembers where a worker finds it."""
        module = defining_module(op)
        script = ""
        if module in ("__main__", "__mp_main__"):
            script = os.path.abspath(getattr(sys.modules[module], "__file__", "") or "")
        return cls(_frozen(op), str(op.name), module, script)

    @property
    def token(self) -> str:
        """What task keys name: the op and, in this process, its definition as referenced."""
        handle = self._handle
        return self.name if handle is None else f"{self.name}@{handle.generation:x}"

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        handle = self._handle
        if handle is None:
            handle = self._handle = _resolve(self.name, self.module, self.script)
        return handle(*args, **kwargs)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return OpRef, (None, self.name, self.module, self.script)

    def __repr__(self) -> str:
        return f"<customop op {self.name} from {self.module or '?'}>"


def _frozen(op: OperatorHandle) -> OperatorHandle:
    """A handle that calls through ``op``'s table as it is now (`OperatorHandle.frozen`)."""
    return op.frozen()


def _resolve(name: str, module: str, script: str) -> OperatorHandle:
    handle = _found.get(name)
    if handle is not None and handle.has_schema:
        return handle
    with _lock:
        handle = default_dispatcher.find_op(name)
        if handle is None or not handle.has_schema:
            _load(name, module, script)
            handle = default_dispatcher.find_op(name)
        if handle is None or not handle.has_schema:
            _missing(name, module, None)
        _found[name] = handle
    return handle


def _load(name: str, module: str, script: str) -> None:
    try:
        if script:
            if script not in _scripts:
                _scripts.add(script)
                runpy.run_path(script, run_name="__customop_script__")
        elif module:
            importlib.import_module(module)
    except Exception as exc:
        _missing(name, module, exc)


def _missing(name: str, module: str, cause: BaseException | None) -> NoReturn:
    where = f"module {module!r}" if module else "the module that defines it"
    failed = f" Importing it failed: {type(cause).__name__}: {str(cause)[:200]}." if cause else ""
    raise UnknownOperatorError(
        f"customop.dask: op {name!r} is not defined on this worker (pid {os.getpid()}).{failed} "
        f"A task names its op, and the worker imports {where} to define it. Make {where} "
        "importable on every worker (install it, put it on PYTHONPATH, or "
        "client.upload_file), or import it in a worker preload."
    ) from cause

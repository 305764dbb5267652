"""Kernels torch calls are run by Dynamo as they are, never traced into.

torch's own custom-op kernels live in torch's files, which Dynamo skips; the
mirror's trampolines live here, and Dynamo would trace them as user code
when it meets a call to the op outside a graph (after a graph break). Their
code objects are marked to be skipped, the way ``torch._dynamo.disable``
marks a non-recursive function, through the C extension that torch always
loads (importing ``torch._dynamo`` itself costs about 1.6 s). Kernels the
user wrote, which a trampoline calls, are still Dynamo's to compile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import torch

__all__ = ["KernelLibrary", "Trampoline", "eager_only"]

F = TypeVar("F", bound=Callable[..., Any])
_library: Final[Any] = torch.library  # untyped for mypy

_frames: Final[Any] = getattr(torch._C._dynamo, "eval_frame", None)
_SKIP: Final[Any] = (
    _frames._FrameExecStrategy(_frames._FrameAction.SKIP, _frames._FrameAction.DEFAULT)
    if _frames is not None and hasattr(_frames, "set_code_exec_strategy")
    else None
)


def eager_only(fn: F) -> F:
    """``fn``, its frames skipped by Dynamo (all closures of one ``def`` share the mark)."""
    if _SKIP is not None:
        _frames.set_code_exec_strategy(fn.__code__, _SKIP)
    return fn


class Trampoline:
    """Base of the mirror's kernel objects (their ``__call__`` is torch's kernel).

    Small slotted objects rather than closures: torch keeps each kernel
    object it was given, so what stays behind per registration is one of
    these, its slots emptied by `release` (`KernelLibrary.destroy`).
    Subclasses' ``__call__`` is `eager_only`.
    """

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        eager_only(cls.__call__)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover -- abstract
        raise NotImplementedError

    def release(self) -> None:
        """Drop what the kernel holds (it is never called again: torch removed it)."""
        for kind in type(self).__mro__:
            for name in getattr(kind, "__slots__", ()):
                setattr(self, name, None)


class KernelLibrary:
    """The torch library of one mirror's kernels: the one door they go through.

    Each kernel is registered `eager_only`. torch 2.13 keeps every Python
    kernel object alive after its library is destroyed (about 150 bytes for
    a lambda); `destroy` then empties the cells of the mirror's own closures,
    so what they captured (the op's handle, its torch op, formula adapters)
    is freed, and only the small function objects stay with torch.
    """

    __slots__ = ("_kept", "_lib", "namespace")

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self._lib: Any = _library.Library(namespace, "FRAGMENT")
        self._kept: list[Callable[..., Any]] = []

    def impl(
        self, name: str, fn: Callable[..., Any], key: str, *, with_keyset: bool = False
    ) -> None:
        """Register the mirror's own ``fn`` for ``key`` (``name`` as ``Library.impl`` takes it)."""
        self._lib.impl(name, self._keep(fn), key, with_keyset=with_keyset)

    def register_fake(self, qualname: str, fn: Callable[..., Any]) -> None:
        """Register the mirror's own fake trampoline."""
        _library.register_fake(qualname, self._keep(fn), lib=self._lib)

    def register_torch_dispatch(self, qualname: str, cls: type, rule: Callable[..., Any]) -> None:
        """Register a user's rule (never emptied: it is the user's function)."""
        _library.register_torch_dispatch(qualname, cls, rule, lib=self._lib)

    def register_vmap(self, qualname: str, rule: Callable[..., Any]) -> None:
        """Register the mirror's trampoline to a batching rule.

        Not marked `eager_only`: it only forwards to the user's rule, and torch
        treats it as any ``register_vmap`` rule (its cells are emptied by `destroy`).
        """
        self._kept.append(rule)
        _library.register_vmap(qualname, rule, lib=self._lib)

    def _keep(self, fn: F) -> F:
        self._kept.append(fn)
        return fn if isinstance(fn, Trampoline) else eager_only(fn)

    def destroy(self) -> None:
        """Remove every registration from torch, then free what the kernels captured."""
        self._lib._destroy()
        for fn in self._kept:
            if isinstance(fn, Trampoline):
                fn.release()
            else:
                for cell in getattr(fn, "__closure__", None) or ():
                    cell.cell_contents = None
        self._kept.clear()

"""`Library` and the block decorators that mirror TORCH_LIBRARY / _IMPL / _FRAGMENT."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Literal, TypeAlias

from customop.dispatch import Dispatcher, DispatchKey, DispatchKeySet, RegistrationHandle
from customop.dispatch._global import dispatcher as default_dispatcher
from customop.exceptions import RegistrationError
from customop.schema import FunctionSchema, OperatorName, parse_operator_name, parse_schema
from customop.schema._clip import clip_repr

__all__ = ["Library", "LibraryKind", "library", "library_fragment", "library_impl"]

LibraryKind: TypeAlias = Literal["DEF", "IMPL", "FRAGMENT"]
KeyLike: TypeAlias = DispatchKey | str


def _close_all(handles: list[RegistrationHandle]) -> None:
    # Newest first, so a kernel's removal never exposes one registered after it.
    while handles:
        handles.pop().remove()


class Library:
    """Registrations for one namespace, removed together by `close`.

    ``kind`` is ``"DEF"`` (owns the namespace: one per namespace), ``"FRAGMENT"``
    (adds definitions to it) or ``"IMPL"`` (only kernels, by default for
    ``dispatch_key``). A library is a context manager, and closes itself when
    garbage-collected, like torch's.
    """

    def __init__(
        self,
        ns: str,
        kind: LibraryKind,
        dispatch_key: KeyLike | None = None,
        *,
        dispatcher: Dispatcher | None = None,
        source: str | None = None,
    ) -> None:
        self.dispatcher = default_dispatcher if dispatcher is None else dispatcher
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise RegistrationError(
                f"Library: kind {kind!r} is not a library kind. A library either owns its "
                "namespace (DEF), adds definitions to it (FRAGMENT), or registers kernels "
                "only (IMPL). Use 'DEF', 'FRAGMENT' or 'IMPL'."
            )
        key = (
            None if dispatch_key is None else self.dispatcher.parse_key(dispatch_key, api="Library")
        )
        self.ns = ns
        self.kind = kind
        self.dispatch_key = key
        self._handles: list[RegistrationHandle] = []
        self._handles.append(self.dispatcher.register_library(ns, kind, source=source))
        self._closed = False

    # -- registrations ---------------------------------------------------------------

    def _qualify(self, name: str, api: str) -> OperatorName:
        """``"op"`` / ``"op.overload"`` / ``"ns::op"`` as a name in this namespace."""
        text = name if "::" in name else f"{self.ns}::{name}"
        qualified = parse_operator_name(text)
        if qualified.namespace != self.ns:
            raise RegistrationError(
                f"{api}: {name!r} is in namespace {qualified.namespace!r}, but this library "
                f"is for {self.ns!r}. A library registers in its own namespace only. "
                f"Use Library({qualified.namespace!r}, ...) for it, or drop the prefix."
            )
        return qualified

    def define(
        self,
        schema: str | FunctionSchema,
        *,
        tags: tuple[str, ...] = (),
        source: str | None = None,
        kernels: Mapping[KeyLike, Callable[..., Any]] | None = None,
    ) -> RegistrationHandle:
        """Define an operator: ``"add(Tensor x, Tensor y) -> Tensor"`` (namespace optional).

        ``source`` (``file.py:42``) is where the def is reported to come from;
        by default the calling user code. ``kernels`` (``{key: fn}``) registers
        the op's first kernels with the def, in one step (see
        `Dispatcher.register_def`).
        """
        api = "Library.define"
        self._check_open(api, schema)
        if self.kind == "IMPL":
            raise RegistrationError(
                f"{api}: library {self.ns!r} is an IMPL library, which only registers kernels. "
                "Definitions belong to the namespace's DEF library or a FRAGMENT. "
                f"Use Library({self.ns!r}, 'FRAGMENT') to add definitions."
            )
        parsed = parse_schema(schema) if isinstance(schema, str) else schema
        if parsed.name is None:
            raise RegistrationError(
                f"{api}: schema {str(parsed)!r} has no name. An operator is found by its name. "
                "Write it as 'name(args) -> returns'."
            )
        name = parsed.name
        if not name.namespace:
            parsed = parsed.model_copy(update={"name": self._qualify(str(name), api)})
        elif name.namespace != self.ns:
            self._qualify(str(name), api)  # raises, naming both namespaces
        handle = self.dispatcher.register_def(parsed, tags=tags, source=source, kernels=kernels)
        self._handles.append(handle)
        return handle

    def impl(
        self,
        name: str,
        fn: Callable[..., Any],
        dispatch_key: KeyLike | None = None,
        *,
        with_keyset: bool = False,
        source: str | None = None,
    ) -> RegistrationHandle:
        """Register ``fn`` as the kernel of op ``name`` for ``dispatch_key``.

        The key defaults to the library's own (IMPL libraries), else the
        catch-all CompositeImplicitAutograd. With ``with_keyset=True`` the
        kernel is called as ``fn(keyset, *args, **kwargs)``, to redispatch.
        ``source`` is as for `define`.
        """
        api = "Library.impl"
        self._check_open(api, name)
        op = self._qualify(name, api)
        key = dispatch_key if dispatch_key is not None else self.dispatch_key
        kernel: Callable[..., Any] = fn
        if with_keyset:
            kernel = _keyset_kernel(fn)
        handle = self.dispatcher.register_impl(op, key, kernel, boxed=with_keyset, source=source)
        self._handles.append(handle)
        return handle

    def fallback(
        self, fn: Callable[..., Any], dispatch_key: KeyLike | None = None
    ) -> RegistrationHandle:
        """Register a boxed ``fn(op, keyset, *args, **kwargs)`` for every op at a key."""
        api = "Library.fallback"
        self._check_open(api)
        key = dispatch_key if dispatch_key is not None else self.dispatch_key
        if key is None:
            raise RegistrationError(
                f"{api}: no dispatch key for the fallback of library {self.ns!r}. A fallback "
                "serves one key for every operator. Pass dispatch_key, e.g. 'CPU'."
            )
        handle = self.dispatcher.register_fallback(key, fn)
        self._handles.append(handle)
        return handle

    # -- lifetime --------------------------------------------------------------------

    def _adopt(self, handle: RegistrationHandle) -> None:
        """Remove ``handle``'s registration when this library closes (for front-ends)."""
        self._handles.append(handle)

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self, api: str, op: object = None) -> None:
        if self.closed:
            # Name the op being registered, so a long registration module points at it.
            what = "" if op is None else f" so {clip_repr(str(op), 80)} cannot be registered"
            raise RegistrationError(
                f"{api}: library {self.ns!r} ({self.kind}) is closed,{what}. A closed library "
                "has removed its registrations. Create a new Library."
            )

    def close(self) -> None:
        """Remove every registration of this library, newest first (idempotent)."""
        self._closed = True
        _close_all(self._handles)

    def __del__(self) -> None:
        # Closed when garbage-collected, as torch's Library is. (Not weakref.finalize:
        # four more objects per library, and a @custom_op makes one library per op.)
        # At interpreter exit the process is going away: nothing to undo.
        if not sys.is_finalizing() and not getattr(self, "_closed", True):
            self.close()

    def __enter__(self) -> Library:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        key = f" {self.dispatch_key.name}" if self.dispatch_key is not None else ""
        return f"<Library {self.ns} {self.kind}{key}{state}: {len(self._handles)} registrations>"


def _keyset_kernel(fn: Callable[..., Any]) -> Callable[..., Any]:
    def kernel(op: object, keyset: DispatchKeySet, *args: Any, **kwargs: Any) -> Any:
        return fn(keyset, *args, **kwargs)

    # Dumps and errors name kernels by __name__: show the user's, not this wrapper's.
    functools.update_wrapper(kernel, fn)
    return kernel


Block: TypeAlias = Callable[[Library], object]


def _block(
    ns: str, kind: LibraryKind, key: KeyLike | None, dispatcher: Dispatcher | None
) -> Callable[[Block], Library]:
    def run(body: Block) -> Library:
        lib = Library(ns, kind, key, dispatcher=dispatcher)
        try:
            body(lib)
        except BaseException:
            lib.close()  # a block that fails registers nothing
            raise
        return lib

    return run


def library(ns: str, *, dispatcher: Dispatcher | None = None) -> Callable[[Block], Library]:
    """``TORCH_LIBRARY(ns, m)``: run the decorated ``fn(lib)`` with the namespace's DEF library.

    The decorator returns the `Library`, so the module keeps it (and its ops) alive.
    """
    return _block(ns, "DEF", None, dispatcher)


def library_impl(
    ns: str, dispatch_key: KeyLike, *, dispatcher: Dispatcher | None = None
) -> Callable[[Block], Library]:
    """``TORCH_LIBRARY_IMPL(ns, key, m)``: kernels for ``dispatch_key`` in namespace ``ns``."""
    return _block(ns, "IMPL", dispatch_key, dispatcher)


def library_fragment(
    ns: str, *, dispatcher: Dispatcher | None = None
) -> Callable[[Block], Library]:
    """``TORCH_LIBRARY_FRAGMENT(ns, m)``: more definitions for namespace ``ns``."""
    return _block(ns, "FRAGMENT", None, dispatcher)

"""`Library` and the block decorators that mirror TORCH_LIBRARY / _IMPL / _FRAGMENT."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, TypeAlias

from customop.dispatch import (
    Dispatcher,
    DispatchKey,
    DispatchKeySet,
    KeyLike,
    LibraryKind,
    RegistrationHandle,
    Removable,
    fallthrough,
    run_or_defer,
)
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import RegistrationError, RegistrationValueError
from customop.library._spellings import (
    TagsLike,
    op_name_text,
    read_tags,
    refuse_type_variables,
)
from customop.library._tagged import (
    fake_over_generated,
    is_generated_fake,
    remember_fake_impl,
    tagged_kernels,
)
from customop.library._torch_kernels import adapt_kernel
from customop.ops import canonical_dtypes, check_signature, prepare_kernel
from customop.schema import (
    FunctionSchema,
    OperatorName,
    clip_repr,
    parse_operator_name,
    parse_schema,
)

__all__ = ["Library", "library", "library_fragment", "library_impl"]


def _close_all(handles: list[Removable]) -> None:
    # Newest first, so a kernel's removal never exposes one registered after it.
    members, handles[:] = list(handles), []
    RegistrationHandle.group(members).remove()


class Library:
    """Registrations for one namespace, removed together by `close`.

    ``kind`` is ``"DEF"`` (owns the namespace: one per namespace), ``"FRAGMENT"``
    (adds definitions to it) or ``"IMPL"`` (only kernels, by default for
    ``dispatch_key``). A library is a context manager, and closes itself when
    garbage-collected, like torch's.

    Args:
        ns: the namespace, e.g. ``"mylib"``.
        kind: ``"DEF"``, ``"FRAGMENT"`` or ``"IMPL"``.
        dispatch_key: the default key of `impl` (IMPL libraries).
        dispatcher: where to register; default: ``customop.dispatcher``.
        source: where the library is reported to come from; default: the
            caller's file and line.

    Examples:
        >>> import numpy as np
        >>> import customop
        >>> d = customop.Dispatcher()
        >>> with customop.Library("doclib", "DEF", dispatcher=d) as lib:
        ...     _ = lib.define("add(Tensor x, Tensor y) -> Tensor")
        ...     _ = lib.impl("add", lambda x, y: x + y, "CPU")
        ...     print(d.find_op("doclib::add")(np.ones(2), np.ones(2)))
        [2. 2.]
        >>> d.find_op("doclib::add") is None  # closing the library removed the op
        True
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
        # dispatch_key="" is torch's spelling of "none": the same as None.
        self.dispatcher = default_dispatcher if dispatcher is None else dispatcher
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise RegistrationValueError(
                f"Library: kind {kind!r} is not a library kind (torch: Unsupported kind). A "
                "library either owns its namespace (DEF), adds definitions to it (FRAGMENT), "
                "or registers kernels only (IMPL). Use 'DEF', 'FRAGMENT' or 'IMPL'."
            )
        key = None if not dispatch_key else self.dispatcher.parse_key(dispatch_key, api="Library")
        self.ns = ns
        self.kind = kind
        self.dispatch_key = key
        claim = self.dispatcher.register_library(ns, kind, source=source)
        # FRAGMENT and IMPL libraries claim nothing (their handle undoes nothing), so
        # only a DEF library keeps its claim: one object less per library, and a
        # @custom_op makes one library per op (every kept object costs each full gc).
        self._handles: list[Removable] = [claim] if kind == "DEF" else []
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
        alias_analysis: str = "",
        *,
        tags: TagsLike = (),
        source: str | None = None,
        kernels: Mapping[KeyLike, Callable[..., Any]] | None = None,
        kernel_hint: str = "",
    ) -> RegistrationHandle:
        """Define an operator: ``"add(Tensor x, Tensor y) -> Tensor"`` (namespace optional).

        ``source`` (``file.py:42``) is where the def is reported to come from;
        by default the calling user code. ``kernels`` (``{key: fn}``) registers
        the op's first kernels with the def, in one step (see
        `Dispatcher.register_def`). ``tags`` is a tag, or a sequence of them: a
        str, or a ``torch.Tag`` (read by its name). ``alias_analysis`` is
        torch's: aliasing always comes from the schema (``"FROM_SCHEMA"``).

        Args:
            schema: the schema, as text or a parsed `FunctionSchema`; it must have a
                name, and one without a namespace gets this library's.
            alias_analysis: torch's argument; only ``""`` and ``"FROM_SCHEMA"``
                are accepted, as aliasing is read from the schema's annotations.
            tags: a tag or a sequence of tags (str or ``torch.Tag``).
            source: where the def is reported to come from; default: the
                caller's file and line.
            kernels: the op's first kernels, ``{dispatch key: fn}``, registered
                in the same write as the def.
            kernel_hint: how the op's definer registers a kernel, for "no kernel"
                errors (see `Dispatcher.register_def`).

        Returns:
            The def's handle; its ``remove()`` (or closing the library) takes the
            op and ``kernels`` away.

        Raises:
            RegistrationError: the library is closed or an IMPL library, the
                schema has no name or names another namespace, ``alias_analysis``
                is not supported, or the op is defined already.
        """
        api = "Library.define"
        self._check_open(api, schema)
        if alias_analysis not in ("", "FROM_SCHEMA"):
            raise RegistrationError(
                f"{api}: alias_analysis={alias_analysis[:50]!r} is not supported. customop reads "
                "aliasing from the schema's annotations only (torch's FROM_SCHEMA). Annotate the "
                "schema, e.g. 'Tensor(a!) x', and drop alias_analysis."
            )
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
        refuse_type_variables(parsed, api)
        name = parsed.name
        if not name.namespace:
            parsed = parsed.model_copy(update={"name": self._qualify(str(name), api)})
        elif name.namespace != self.ns:
            self._qualify(str(name), api)  # raises, naming both namespaces
        tag_names = read_tags(tags)
        if kernels:
            kernels = {key: prepare_kernel(fn, parsed) for key, fn in kernels.items()}
        kernels = tagged_kernels(parsed, tag_names, kernels, api)  # inplace / out: a fake too
        handle = self.dispatcher.register_def(
            parsed, tags=tag_names, source=source, kernels=kernels, kernel_hint=kernel_hint
        )
        self._handles.append(handle)
        return handle

    def impl(
        self,
        name: str | object,
        fn: Callable[..., Any],
        dispatch_key: KeyLike | None = None,
        *,
        with_keyset: bool = False,
        allow_override: bool = True,
        source: str | None = None,
    ) -> RegistrationHandle:
        """Register ``fn`` as the kernel of op ``name`` for ``dispatch_key``.

        The key defaults to the library's own (IMPL libraries), else the
        catch-all CompositeImplicitAutograd; ``""`` (torch's default) means the
        same. With ``with_keyset=True`` the kernel is called as
        ``fn(keyset, *args, **kwargs)``, to redispatch. When the op is already
        defined, ``fn``'s parameters are checked against its schema now, as
        `register_kernel` does. With ``allow_override=False`` a kernel already
        registered for the key is an error instead of being overridden (with
        a warning). ``source`` is as for `define`.

        Args:
            name: the op, as ``"op"``, ``"op.overload"``, ``"ns::op"`` or an op object
                (a customop or torch `OpOverload` or packet) (in this
                library's namespace); it may be defined later.
            fn: the kernel, called with the op's arguments.
            dispatch_key: the key ``fn`` serves (a `DispatchKey` or its name);
                None or ``""``: the library's own key, else CompositeImplicitAutograd.
            with_keyset: call ``fn(keyset, *args, **kwargs)`` with the call's
                `DispatchKeySet` (``fn``'s signature is then not checked).
            allow_override: with False, refuse when the op already has a kernel
                for the key.
            source: where the registration is reported to come from; default:
                the caller's file and line.

        Returns:
            The kernel's handle; its ``remove()`` (or closing the library)
            restores the kernel this one overrode.

        Raises:
            RegistrationError: the library is closed, ``name`` is in another
                namespace, ``fn`` does not fit the op's schema, or a kernel
                exists and ``allow_override`` is False.
            DispatchKeyError: ``dispatch_key`` is not a dispatch key.
        """
        api = "Library.impl"
        name = op_name_text(name)  # torch code passes op objects too
        if not isinstance(name, str):
            raise TypeError(
                f"{api}: expected the op's name or op object, got {name!r:.200}. The kernel "
                "is registered for a named op. Pass 'op', 'op.overload', 'ns::op' or the op."
            )
        self._check_open(api, name)
        op = self._qualify(name, api)
        key = self._key(dispatch_key, f"{api}({str(op)!r})")  # a bad key's error names the op
        if self.dispatch_key is not None and key is not self.dispatch_key:
            raise RegistrationError(
                f"{api}: {str(op)!r} for key {key.name if key else None!r} in a library of "
                f"key {self.dispatch_key.name!r} (torch: Explicitly provided dispatch key is "
                "inconsistent with the dispatch key of the enclosing TORCH_LIBRARY_IMPL "
                "block). A keyed library registers for its own key only. Leave the key out, "
                "or use a library without one."
            )
        if not allow_override:
            self._refuse_override(op, key, api)
        kernel = _keyset_kernel(fn) if with_keyset else self._checked(op, fn, key, api)
        adapted = None if with_keyset else adapt_kernel(kernel, key, fn)  # torch's conventions
        boxed = with_keyset or adapted is not None
        with fake_over_generated(self.dispatcher, str(op), key):
            handle = self.dispatcher.register_impl(
                op, key, kernel if adapted is None else adapted, boxed=boxed, source=source
            )
        self._handles.append(handle)
        return handle

    def _key(self, dispatch_key: KeyLike | None, api: str) -> DispatchKey | None:
        """The key a registration names; ``None`` and ``""`` mean the library's own."""
        if not dispatch_key:
            return self.dispatch_key
        return self.dispatcher.parse_key(dispatch_key, api=api)

    def _refuse_override(self, op: OperatorName, key: DispatchKey | None, api: str) -> None:
        found = self.dispatcher.find_op(str(op))
        target = DispatchKey.CompositeImplicitAutograd if key is None else key
        record = None if found is None else found._entry.top(target)
        if record is not None and not is_generated_fake(record.fn):  # a generated fake gives way
            raise RegistrationError(
                f"{api}: {str(op)!r} already has a kernel for {target.name!r} (torch: there is "
                f"already a kernel registered, from {record.source if record else '?'}), and "
                "allow_override=False. Registering another would override it. Remove the first "
                "kernel's handle, or leave allow_override at True to stack the new one over it."
            )

    def _checked(
        self, op: OperatorName, fn: Callable[..., Any], key: DispatchKey | None, api: str
    ) -> Callable[..., Any]:
        """``fn``, its signature checked against ``op``'s schema when the op is defined."""
        found = self.dispatcher.find_op(str(op))
        if found is None or not found.has_schema or fn is fallthrough:
            return fn  # a dangling impl: checked against nothing yet, as in torch
        what = "fake impl" if key is DispatchKey.Fake else "kernel"
        # Library.impl, as torch's, takes kernels such as numpy.array_split whose
        # positional parameters have other names: it checks only that fn can take
        # the arguments (register_kernel and register_fake also check the names).
        check_signature(fn, found.schema, api, what, names=api != "Library.impl")
        if key is DispatchKey.Fake:
            return canonical_dtypes(fn, found.schema)
        return prepare_kernel(fn, found.schema)

    def register_fake(
        self, name: str, fn: Callable[..., Any], *, allow_override: bool = True
    ) -> RegistrationHandle:
        """Register ``fn`` as the fake impl of op ``name``, removed when this library closes.

        torch spells it ``Library._register_fake`` (vLLM's
        ``direct_register_custom_op`` calls it); that name is an alias.

        Args:
            name: The op, as ``"op"``, ``"op.overload"`` or ``"ns::op"``.
            fn: The fake impl; its parameters are checked against the schema.
            allow_override: With False, refuse when the op already has a fake impl.

        Returns:
            The registration's handle.
        """
        api = "Library.register_fake"
        self._check_open(api, name)
        op = self._qualify(name, api)
        if not allow_override:
            self._refuse_override(op, DispatchKey.Fake, api)
        fake = self._checked(op, remember_fake_impl(fn, str(op)), DispatchKey.Fake, api)
        with fake_over_generated(self.dispatcher, str(op)):
            handle = self.dispatcher.register_impl(op, DispatchKey.Fake, fake)
        self._handles.append(handle)
        return handle

    def _register_fake(
        self,
        op_name: str,
        fn: Callable[..., Any],
        _stacklevel: int = 1,
        *,
        allow_override: bool = True,
    ) -> RegistrationHandle:
        # torch's private spelling, kept for ported code (vLLM); see register_fake.
        # _stacklevel is accepted and unused: customop finds the caller's line itself.
        return self.register_fake(op_name, fn, allow_override=allow_override)

    def fallback(
        self,
        fn: Callable[..., Any],
        dispatch_key: KeyLike | None = None,
        *,
        with_keyset: bool | None = None,
    ) -> RegistrationHandle:
        """Register a boxed ``fn`` for every op at a key.

        By default ``fn`` is called as ``fn(op, keyset, *args, **kwargs)``.
        Passing torch's ``with_keyset`` selects torch's conventions:
        ``with_keyset=False`` calls ``fn(op, *args, **kwargs)``,
        ``with_keyset=True`` calls ``fn(keyset, op, *args, **kwargs)``.

        Args:
            fn: the fallback, which receives the `OperatorHandle` being called
                (and its `DispatchKeySet`, as above); or `fallthrough`, to skip the key.
            dispatch_key: the key it serves; default: the library's own key
                (IMPL libraries). An alias key registers on each key it expands to.
            with_keyset: None for customop's calling convention, or torch's
                False / True as described above.

        Returns:
            The fallback's handle; its ``remove()`` (or closing the library)
            unregisters it.

        Raises:
            RegistrationError: the library is closed, no key was given and the
                library has none, or the key already has a fallback.
            DispatchKeyError: ``dispatch_key`` is not a dispatch key.
        """
        api = "Library.fallback"
        self._check_open(api)
        key = self._key(dispatch_key, api)
        if key is None:
            raise RegistrationError(
                f"{api}: no dispatch key for the fallback of library {self.ns!r}. A fallback "
                "serves one key for every operator. Pass dispatch_key, e.g. 'CPU'."
            )
        handle = self.dispatcher.register_fallback(key, _torch_fallback(fn, with_keyset))
        self._handles.append(handle)
        return handle

    # -- lifetime --------------------------------------------------------------------

    def _adopt(self, handle: Removable) -> None:
        """Remove ``handle``'s registration when this library closes (for front-ends)."""
        self._handles.append(handle)

    @property
    def closed(self) -> bool:
        """Whether ``close()`` has run: its registrations are gone and new ones are refused."""
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
        # At interpreter exit the process is going away: nothing to undo. A
        # collection can start inside a registry section of this thread; then the
        # close waits for the section's end (see customop.dispatch._guard).
        if not sys.is_finalizing() and not getattr(self, "_closed", True):
            run_or_defer(self.close)

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
        count = len(self._handles)
        counted = f"{count} registration{'' if count == 1 else 's'}"
        return f"<Library {self.ns} {self.kind}{key}{state}: {counted}>"


def _keyset_kernel(fn: Callable[..., Any]) -> Callable[..., Any]:
    def kernel(op: object, keyset: DispatchKeySet, /, *args: Any, **kwargs: Any) -> Any:
        return fn(keyset, *args, **kwargs)

    # Dumps and errors name kernels by __name__: show the user's, not this wrapper's.
    functools.update_wrapper(kernel, fn)
    return kernel


def _torch_fallback(fn: Callable[..., Any], with_keyset: bool | None) -> Callable[..., Any]:
    """``fn`` called the way torch calls a fallback registered with ``with_keyset``."""
    if with_keyset is None or fn is fallthrough:
        return fn

    def with_keys(op: object, keyset: DispatchKeySet, /, *args: Any, **kwargs: Any) -> Any:
        return fn(keyset, op, *args, **kwargs)

    def without_keys(op: object, keyset: DispatchKeySet, /, *args: Any, **kwargs: Any) -> Any:
        return fn(op, *args, **kwargs)

    kernel = with_keys if with_keyset else without_keys
    functools.update_wrapper(kernel, fn)  # dumps name the user's function
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

    Args:
        ns: the namespace.
        dispatcher: where to register; default: ``customop.dispatcher``.

    Returns:
        A decorator that runs the block and returns its `Library`.
    """
    return _block(ns, "DEF", None, dispatcher)


def library_impl(
    ns: str, dispatch_key: KeyLike, *, dispatcher: Dispatcher | None = None
) -> Callable[[Block], Library]:
    """``TORCH_LIBRARY_IMPL(ns, key, m)``: kernels for ``dispatch_key`` in namespace ``ns``.

    Args:
        ns: the namespace.
        dispatch_key: the key the block's kernels serve.
        dispatcher: where to register; default: ``customop.dispatcher``.

    Returns:
        A decorator that runs the block and returns its `Library`.
    """
    return _block(ns, "IMPL", dispatch_key, dispatcher)


def library_fragment(
    ns: str, *, dispatcher: Dispatcher | None = None
) -> Callable[[Block], Library]:
    """``TORCH_LIBRARY_FRAGMENT(ns, m)``: more definitions for namespace ``ns``.

    Args:
        ns: the namespace.
        dispatcher: where to register; default: ``customop.dispatcher``.

    Returns:
        A decorator that runs the block and returns its `Library`.
    """
    return _block(ns, "FRAGMENT", None, dispatcher)

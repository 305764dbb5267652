"""`Dispatcher`: the operator registry, with PyTorch's registration semantics.

Every write holds one re-entrant lock, validates everything before it changes
anything, rebuilds the affected tables, publishes each with one store, and
advances the global `epoch`. Calls (on `OperatorHandle`) never take the lock.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Literal, TypeAlias, TypeVar, final
from weakref import WeakSet, WeakValueDictionary

from customop.dispatch._changes import tell_changed
from customop.dispatch._entry import EmptyState, OperatorEntry, empty_state
from customop.dispatch._extra_registry import ExtraRegistry
from customop.dispatch._guard import RegistryLock
from customop.dispatch._handles import RegistrationHandle
from customop.dispatch._kernel import (
    DEFAULT_SOURCE,
    Kernel,
    KernelRecord,
    caller_source,
    fallthrough,
    user_stacklevel,
)
from customop.dispatch._keys import DispatchKey
from customop.dispatch._local import epoch
from customop.dispatch._lookup import Lookup, NameLike
from customop.dispatch._messages import (
    duplicate_def_error,
    fallback_conflict_error,
    library_conflict_error,
    override_warning,
)
from customop.dispatch._operator import OperatorHandle
from customop.dispatch._registry import (
    KeyLike,
    OperatorListener,
    Registration,
    as_listener,
    check_kernel,
    check_namespace,
    coerce_schema,
    coerce_tags,
    op_name,
)
from customop.dispatch._table import affected_keys
from customop.exceptions import KernelOverrideWarning, RegistrationError
from customop.schema import FunctionSchema, OperatorName

__all__ = ["CREATION_HOOKS", "LIVE_DISPATCHERS", "Dispatcher", "LibraryKind"]

LibraryKind: TypeAlias = Literal["DEF", "FRAGMENT", "IMPL"]
T = TypeVar("T")
_CIA = DispatchKey.CompositeImplicitAutograd


#: Every dispatcher alive (weakly held), for layers that serve a key on all of them.
LIVE_DISPATCHERS: WeakSet[Dispatcher] = WeakSet()
#: Called with each new dispatcher once it is made (dispatch modes install their
#: Python fallback on one made while a mode is active).
CREATION_HOOKS: list[Callable[[Dispatcher], None]] = []


@final
class Dispatcher(Lookup, ExtraRegistry):
    """Operators, their kernels per dispatch key, and the fallbacks shared by all of them.

    A fresh dispatcher maps ``numpy.ndarray`` to CPU and, unless
    ``autograd_fallthrough=False``, has `fallthrough` fallbacks on the Autograd
    keys (there is no autograd engine yet); see `default_registrations`.

    Args:
        autograd_fallthrough: register fallthrough fallbacks on the Autograd keys.

    Examples:
        >>> import numpy as np
        >>> from customop import Dispatcher
        >>> d = Dispatcher()
        >>> _ = d.register_def("demo::neg(Tensor x) -> Tensor")
        >>> _ = d.register_impl("demo::neg", "CPU", lambda x: -x)
        >>> d.find_op("demo::neg")(np.arange(3))
        array([ 0, -1, -2])
        >>> print(d.find_op("demo::neg").table_entry("CPU").reason)
        kernel
    """

    def __init__(self, *, autograd_fallthrough: bool = True) -> None:
        self._lock = RegistryLock(reentrant=True)
        super().__init__()
        self._entries: dict[OperatorName, OperatorEntry] = {}
        # Erased entries that a live handle still points at: a new def revives them.
        self._retired: WeakValueDictionary[OperatorName, OperatorEntry] = WeakValueDictionary()
        self._fallbacks: dict[DispatchKey, KernelRecord] = {}
        # What an operator without kernels gets; recomputed after fallbacks change.
        self._empty: EmptyState | None = None
        self._libraries: dict[str, Registration] = {}
        self._listeners: tuple[tuple[Registration, OperatorListener], ...] = ()
        # By name: numpy is imported by whoever makes arrays, not by `import customop`.
        defaults = [self._add_array_type("numpy.ndarray", DispatchKey.CPU, DEFAULT_SOURCE)]
        self._autograd_default: RegistrationHandle | None = None
        if autograd_fallthrough:
            self._autograd_default = self._add_fallback(
                DispatchKey.Autograd, fallthrough, "", DEFAULT_SOURCE
            )
            defaults.append(self._autograd_default)
        self._defaults = tuple(defaults)
        LIVE_DISPATCHERS.add(self)  # dispatch modes install their Python fallback on each
        for hook in CREATION_HOOKS:
            hook(self)

    @property
    def default_registrations(self) -> tuple[RegistrationHandle, ...]:
        """Handles of what the constructor registered (numpy array type, autograd fallthroughs)."""
        return self._defaults

    # -- defs ----------------------------------------------------------------------

    def register_def(
        self,
        schema: FunctionSchema | str,
        *,
        debug: str = "",
        tags: Iterable[str] = (),
        source: str | None = None,
        kernels: Mapping[KeyLike, Kernel] | None = None,
        kernel_hint: str = "",
    ) -> RegistrationHandle:
        """Define an operator: one def per name and overload. Impls may come before it.

        ``source`` is where the registration is reported to come from (errors,
        dumps, the handle); by default the calling user code, as ``file.py:42``.
        ``kernels`` (``{key: kernel}``) registers the op's first kernels in the
        same write, so no call ever sees the op without them; the handle then
        removes them too.

        Args:
            schema: the schema, as text or a parsed `FunctionSchema`; it must have a name.
            debug: free text shown beside the source in dumps and errors.
            tags: tags of the op (as torch's ``Tag`` names).
            source: where the registration comes from; default: the caller's file and line.
            kernels: first kernels by key, registered in the same write.
            kernel_hint: how the op's definer registers a kernel, shown by "no kernel"
                errors with ``{device}`` filled in (``@custom_op``:
                ``"f.register_kernel('{device}', fn)"``); default: ``register_impl``.

        Returns:
            A handle whose ``remove()`` takes the def (and ``kernels``) away.

        Raises:
            RegistrationError: the op is defined already (naming where), or the
                schema is not registrable.
        """
        schema, name = coerce_schema(schema)
        tag_tuple = coerce_tags(tags)
        source = caller_source() if source is None else source
        api, text = "register_def", str(name)
        records = tuple(
            KernelRecord(
                check_kernel(fn, api), False, self.parse_key(key, api=api), source, debug, text
            )
            for key, fn in (kernels or {}).items()
        )
        with self._lock:
            existing = self._entries.get(name)
            if existing is not None and existing.def_count:
                where = Registration(source, debug).where
                raise duplicate_def_error(str(name), existing.def_where, where)
            entry = self._obtain(name)
            entry.set_schema(schema, source, debug, tag_tuple)
            entry.kernel_hint = kernel_hint
            entry.def_count += 1
            entry.def_and_impl_count += 1
            # Publishes (also with no kernels: the schema); listeners hear of the op
            # once, with its first kernels, from `_announce`.
            self._push_impls(entry, records, notify=False)
            try:
                self._announce(entry)
            except BaseException:
                self._drop_impls(entry, records)
                self._drop_def(entry, notify=False)
                raise
            finally:
                epoch.advance()  # also on failure: the def was briefly visible to calls
        undo = _RemoveDef(self, entry, records)
        return RegistrationHandle(undo, description=f"def {text}", source=source)

    def _push_impls(
        self, entry: OperatorEntry, records: Sequence[KernelRecord], *, notify: bool = True
    ) -> None:
        """Push kernels on their stacks (warning of overrides), rebuild, publish."""
        for record in records:
            previous = entry.top(record.key)
            if previous is not None:
                text = override_warning(
                    str(entry.name), self.key_name(record.key), previous, record.label
                )
                warnings.warn(text, KernelOverrideWarning, stacklevel=user_stacklevel())
            entry.push(record)
            entry.def_and_impl_count += 1
        entry.rebuild_keys(affected_keys(r.key for r in records), self._fallbacks)
        if notify:
            tell_changed(self._listeners, entry.handle)

    def _drop_impls(self, entry: OperatorEntry, records: Sequence[KernelRecord]) -> None:
        live = [record for record in reversed(records) if record.alive]
        for record in live:
            record.alive = False
            entry.pop(record)
            entry.def_and_impl_count -= 1
        entry.rebuild_keys(affected_keys(r.key for r in live), self._fallbacks)
        tell_changed(self._listeners, entry.handle)

    def _announce(self, entry: OperatorEntry) -> None:
        told: list[OperatorListener] = []
        try:
            for _, listener in self._listeners:
                listener.on_operator_registered(entry.handle)
                told.append(listener)
        except BaseException:
            # The def fails as a whole: take the news back from those who heard it.
            for heard in told:
                _quietly(heard.on_operator_deregistered, entry.handle)
            raise

    def _remove_def(self, undo: _RemoveDef) -> None:
        with self._lock:
            if undo.entry is None:
                return
            entry, undo.entry = undo.entry, None
            self._drop_impls(entry, undo.kernels)
            errors = self._drop_def(entry, notify=True)
            epoch.advance()
        if errors:
            raise errors[0]

    def _drop_def(self, entry: OperatorEntry, *, notify: bool) -> list[BaseException]:
        errors: list[BaseException] = []
        entry.def_count -= 1
        entry.def_and_impl_count -= 1
        if entry.def_count == 0:
            if notify:
                for _, listener in self._listeners:
                    error = _quietly(listener.on_operator_deregistered, entry.handle)
                    if error is not None:
                        errors.append(error)
            entry.clear_schema()
            entry.publish()
        self._cleanup(entry)
        return errors

    def _obtain(self, name: OperatorName) -> OperatorEntry:
        entry = self._entries.get(name)
        if entry is None:
            entry = self._retired.pop(name, None) or OperatorEntry(name, self)
            # Fallbacks may have changed while it was retired; new ones start empty.
            if self._empty is None:
                self._empty = empty_state(self._fallbacks)
            entry.reset(self._empty)
            self._entries[name] = entry
        return entry

    def _cleanup(self, entry: OperatorEntry) -> None:
        if entry.def_and_impl_count == 0:
            del self._entries[entry.name]
            self._retired[entry.name] = entry

    # -- impls and fallbacks -------------------------------------------------------

    def register_impl(
        self,
        op: NameLike,
        key: KeyLike | None,
        kernel: Kernel,
        *,
        boxed: bool = False,
        debug: str = "",
        source: str | None = None,
    ) -> RegistrationHandle:
        """Register ``kernel`` for ``op`` at ``key`` (None: CompositeImplicitAutograd).

        A plain kernel is called as ``kernel(*args, **kwargs)``; with ``boxed=True``
        as ``kernel(op, keyset, *args, **kwargs)``. A newer kernel for the same key
        overrides (with a `KernelOverrideWarning`) until its handle is removed.
        ``source`` is as for `register_def`.

        Args:
            op: the operator: an `OperatorName`, its text, or a handle.
            key: the dispatch key (a `DispatchKey` or its name); ``None`` is the
                catch-all CompositeImplicitAutograd.
            kernel: the function to run.
            boxed: call it as ``kernel(op, keyset, *args, **kwargs)``.
            debug: free text shown beside the source in dumps and errors.
            source: where the registration comes from; default: the caller's file and line.

        Returns:
            A handle whose ``remove()`` restores the kernel this one overrode.

        Raises:
            DispatchKeyError: ``key`` is not a dispatch key.
        """
        api = "register_impl"
        name = op_name(op, api)
        dispatch_key = _CIA if key is None else self.parse_key(key, api=f"{api}({str(name)!r})")
        check_kernel(kernel, api)
        source = caller_source() if source is None else source
        record = KernelRecord(kernel, bool(boxed), dispatch_key, source, debug, op=str(name))
        with self._lock:
            entry = self._obtain(name)
            self._push_impls(entry, [record])
            epoch.advance()
        description = f"impl {name} {self.key_name(dispatch_key)}"
        return RegistrationHandle(
            partial(self._remove_impl, entry, record), description=description, source=source
        )

    def _remove_impl(self, entry: OperatorEntry, record: KernelRecord) -> None:
        with self._lock:
            if not record.alive:
                return
            self._drop_impls(entry, [record])
            self._cleanup(entry)
            epoch.advance()

    def register_fallback(
        self,
        key: KeyLike,
        kernel: Kernel,
        *,
        debug: str = "",
        wrapper: bool = False,
        source: str | None = None,
    ) -> RegistrationHandle:
        """Register a boxed ``kernel(op, keyset, *args, **kwargs)`` for every op at ``key``.

        One fallback per runtime key; an alias key registers on each key of its
        expansion. It serves existing and future operators that have no better
        kernel for the key (see the table precedence). ``wrapper=True`` is for
        backends whose arrays wrap other arrays (Dask): the fallback then also
        beats composite kernels; only a kernel on the key itself beats it.

        Args:
            key: the dispatch key (a `DispatchKey` or its name); an alias key
                registers the fallback on every runtime key it expands to.
            kernel: the boxed function, called as ``kernel(op, keyset, *args, **kwargs)``
                with the `OperatorHandle` being called and the call's key set; it
                may be `fallthrough`, to skip the key for every op without a kernel on it.
            debug: free text shown beside the source in dumps and errors.
            wrapper: serve the key ahead of CompositeExplicitAutograd and
                CompositeImplicitAutograd kernels, so an op with a composite
                kernel still reaches the fallback (which would otherwise compute on
                the wrapper array instead of on what it wraps).

        Returns:
            A handle whose ``remove()`` unregisters the fallback on every key it was
            registered on.

        Raises:
            DispatchKeyError: ``key`` is not a dispatch key.
            RegistrationError: one of the keys already has a fallback (the
                Autograd keys have `fallthrough` ones unless the dispatcher was made
                with ``autograd_fallthrough=False``).
        """
        api = "register_fallback"
        dispatch_key = self.parse_key(key, api=api)
        check_kernel(kernel, api)
        source = caller_source() if source is None else source
        return self._add_fallback(dispatch_key, kernel, debug, source, wrapper=wrapper)

    def _add_fallback(
        self, key: DispatchKey, kernel: Kernel, debug: str, source: str, *, wrapper: bool = False
    ) -> RegistrationHandle:
        with self._lock:
            records = [
                KernelRecord(kernel, True, k, source, debug, wrapper=wrapper) for k in key.expansion
            ]
            for record in records:
                existing = self._fallbacks.get(record.key)
                if existing is not None:
                    key_name = self.key_name(record.key)
                    raise fallback_conflict_error(key_name, existing.where, record.where)
            for record in records:
                self._fallbacks[record.key] = record
                self._refresh_key(record.key)
            epoch.advance()
        return RegistrationHandle(
            partial(self._remove_fallbacks, records),
            description=f"fallback {self.key_name(key)}",
            source=source,
        )

    def _remove_fallbacks(self, records: list[KernelRecord]) -> None:
        with self._lock:
            live = [record for record in records if record.alive]
            for record in live:
                record.alive = False
                del self._fallbacks[record.key]
                self._refresh_key(record.key)
            if live:
                epoch.advance()

    def _refresh_key(self, key: DispatchKey) -> None:
        self._empty = None
        for entry in self._entries.values():
            entry.rebuild_keys((key,), self._fallbacks)

    # -- libraries, array types, listeners -----------------------------------------

    def register_library(
        self,
        namespace: str,
        kind: LibraryKind = "DEF",
        *,
        debug: str = "",
        source: str | None = None,
    ) -> RegistrationHandle:
        """Claim ``namespace`` for a DEF library; FRAGMENT and IMPL libraries may be many.

        ``source`` is as for `register_def`.

        Args:
            namespace: the namespace, e.g. ``"mylib"``.
            kind: ``"DEF"``, ``"FRAGMENT"`` or ``"IMPL"``.
            debug: free text shown beside the source in errors.
            source: where the library comes from; default: the caller's file and line.

        Returns:
            A handle whose ``remove()`` releases the claim.

        Raises:
            RegistrationError: a second DEF library for ``namespace`` (naming the first).
        """
        api = "register_library"
        check_namespace(namespace, api)
        if kind not in ("DEF", "FRAGMENT", "IMPL"):
            raise RegistrationError(
                f"{api}: kind {kind!r} is not a library kind. A library either owns its "
                "namespace's definitions or adds to them. Use 'DEF', 'FRAGMENT' or 'IMPL'."
            )
        source = caller_source() if source is None else source
        description = f"library {kind} {namespace}"
        if kind != "DEF":
            return RegistrationHandle(_nothing, description=description, source=source)
        record = Registration(source, debug)
        with self._lock:
            existing = self._libraries.get(namespace)
            if existing is not None:
                raise library_conflict_error(namespace, existing.where, record.where)
            self._libraries[namespace] = record
            epoch.advance()
        undo = self._remover(self._libraries, namespace, record)
        return RegistrationHandle(undo, description=description, source=source)

    def add_listener(self, listener: OperatorListener) -> RegistrationHandle:
        """Tell ``listener`` about every defined op now, and about changes later.

        Args:
            listener: an `OperatorListener` (``on_operator_registered(op)``,
                ``on_operator_deregistered(op)``, ``on_operator_changed(op)``).

        Returns:
            A handle whose ``remove()`` stops the notifications.
        """
        listener = as_listener(listener)
        source = caller_source()
        record = Registration(source)
        with self._lock:
            for entry in list(self._entries.values()):
                if entry.schema is not None:
                    listener.on_operator_registered(entry.handle)
            self._listeners = (*self._listeners, (record, listener))

        def undo() -> None:
            with self._lock:
                if record.alive:
                    record.alive = False
                    self._listeners = tuple(
                        pair for pair in self._listeners if pair[0] is not record
                    )

        return RegistrationHandle(undo, description=f"listener {listener!r}", source=source)

    def _remover(
        self, table: dict[str, Registration], key: str, record: Registration
    ) -> Callable[[], None]:
        def undo() -> None:
            with self._lock:
                if record.alive:
                    record.alive = False
                    del table[key]
                    epoch.advance()

        return undo


@final
class _RemoveDef:
    """The undo of one def: one object, where a partial of a bound method is three.

    (Each object an op keeps costs time in every full gc collection: see the
    NOTE in `customop.dispatch._entry`.) ``entry`` is None once removed.
    """

    __slots__ = ("dispatcher", "entry", "kernels")

    def __init__(
        self, dispatcher: Dispatcher, entry: OperatorEntry, kernels: tuple[KernelRecord, ...]
    ) -> None:
        self.dispatcher = dispatcher
        self.entry: OperatorEntry | None = entry
        self.kernels = kernels

    def __call__(self) -> None:
        self.dispatcher._remove_def(self)


def _nothing() -> None:
    """Undo of a registration that recorded nothing (FRAGMENT and IMPL libraries)."""


def _quietly(
    hook: Callable[[OperatorHandle], None], handle: OperatorHandle
) -> BaseException | None:
    try:
        hook(handle)
    except Exception as error:  # a listener's failure must not stop the others
        return error
    return None

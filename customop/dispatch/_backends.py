"""Backends as a dispatcher sees them: key names, renamed PrivateUse keys, array types.

PyTorch renames ``PrivateUse1`` process-wide (``rename_privateuse1_backend``);
here each `Dispatcher` keeps its own names, so tests stay hermetic. A renamed
backend ``"dask"`` shows as ``dask`` and its autograd key as ``AutogradDask``
in dumps and errors, both names parse as keys, and ``"dask"`` becomes a device
type for ``Device`` arguments.
"""

from __future__ import annotations

from customop.dispatch._extract import BackendRegistry, KeysOf, backend_bits
from customop.dispatch._guard import RegistryLock
from customop.dispatch._handles import RegistrationHandle
from customop.dispatch._kernel import caller_source
from customop.dispatch._keys import RUNTIME_KEYS, DispatchKey, DispatchKeySet, raise_unknown_key
from customop.dispatch._local import epoch
from customop.dispatch._registry import KeyLike, Registration
from customop.exceptions import DispatchKeyError, RegistrationError

__all__ = ["Backends", "coerce_array_keys"]


class Backends:
    """The backend half of `Dispatcher`: key names, ``rename_backend``, ``register_array_type``."""

    _lock: RegistryLock

    def __init__(self) -> None:
        self._names: dict[DispatchKey, Registration] = {}
        self._backends = BackendRegistry()
        self._array_types: dict[type | str, Registration] = {}
        self._refresh_names()

    def _refresh_names(self) -> None:
        """Recompute the display names and the name -> key table (renames are rare)."""
        display = {key: key.name for key in DispatchKey}
        for backend, record in self._names.items():
            name = str(record.value)
            display[backend] = name
            autograd = backend.autograd_key
            if autograd is not None:
                display[autograd] = f"Autograd{name[:1].upper()}{name[1:]}"
        self._display = display
        self._by_text = {key.name: key for key in DispatchKey} | {n: k for k, n in display.items()}

    def key_name(self, key: DispatchKey) -> str:
        """How this dispatcher shows ``key``: its name, or the name given by `rename_backend`."""
        return self._display[key]

    def parse_key(
        self, key: KeyLike, *, api: str = "parse_key", runtime: bool = False
    ) -> DispatchKey:
        """A `DispatchKey` from a member or a name (canonical or renamed)."""
        if isinstance(key, str):
            found = self._by_text.get(key)
            if found is None:
                raise_unknown_key(api, key, [self.key_name(k) for k in DispatchKey])
            key = found
        if not isinstance(key, DispatchKey):
            raise TypeError(
                f"{api}: expected a DispatchKey or a key name such as 'CPU', got {key!r}. "
                "Kernels and fallbacks are registered per dispatch key. "
                "Pass a DispatchKey member or its name."
            )
        if runtime and key.is_alias:
            runtime_names = ", ".join(self.key_name(k) for k in key.expansion)
            raise DispatchKeyError(
                f"{api}: {key.name!r} is an alias key. Alias keys only register kernels; "
                f"calls run on runtime keys, which have the table entries. Pass one of its "
                f"runtime keys: {runtime_names}."
            )
        return key

    def rename_backend(self, key: KeyLike, name: str) -> RegistrationHandle:
        """Show PrivateUse ``key`` as ``name`` (e.g. ``"dask"``) in dumps, errors and key names."""
        api = "rename_backend"
        dispatch_key = self.parse_key(key, api=api)
        if not dispatch_key.is_private_use:
            raise DispatchKeyError(
                f"{api}: {dispatch_key.name!r} is not a PrivateUse key. Only the PrivateUse "
                "backends are free for user backends to name. Pass PrivateUse1, PrivateUse2 "
                "or PrivateUse3."
            )
        self._check_new_name(api, name)
        source = caller_source()
        record = Registration(source, value=name)
        with self._lock:
            existing = self._names.get(dispatch_key)
            if existing is not None:
                raise RegistrationError(
                    f"{api}: {dispatch_key.name} is already named {existing.value!r}, at "
                    f"{existing.where}; renamed again to {name!r} at {source}. A backend has "
                    "one name, or dumps and key names would disagree. Remove the first "
                    "rename's handle first."
                )
            self._names[dispatch_key] = record
            self._refresh_names()
            self._backends.devices[name] = backend_bits(dispatch_key)
            epoch.advance()

        def undo() -> None:
            with self._lock:
                if record.alive:
                    record.alive = False
                    del self._names[dispatch_key]
                    self._refresh_names()
                    self._backends.devices.pop(name, None)
                    epoch.advance()

        return RegistrationHandle(
            undo, description=f"rename {dispatch_key.name} {name}", source=source
        )

    def register_array_type(
        self, array_type: type | str, keys: KeysOf | DispatchKey
    ) -> RegistrationHandle:
        """Make instances of ``array_type`` tensors for dispatch, with ``keys``.

        ``array_type`` is the class, or its qualified name (``"numpy.ndarray"``),
        which registers it without importing its library.

        ``keys`` is a backend key (the array then carries it and its autograd
        key, like a PyTorch tensor), a `DispatchKeySet` used as is, or a function
        ``keys(array) -> DispatchKeySet`` for types whose keys vary per instance
        (a fake tensor's device). Subclasses are served by their nearest base.
        """
        return self._add_array_type(array_type, keys, caller_source())

    def _add_array_type(
        self, array_type: type | str, keys: KeysOf | DispatchKey, source: str
    ) -> RegistrationHandle:
        coerced = coerce_array_keys(array_type, keys)
        record = Registration(source, value=coerced)
        with self._lock:
            existing = self._array_types.get(array_type) or self._same_name(array_type)
            if existing is not None:
                raise RegistrationError(
                    f"register_array_type: {_type_name(array_type)} is already registered, at "
                    f"{existing.where}; again at {source}. An array type has one set of dispatch "
                    "keys, or calls could not pick a kernel. Remove the first handle first."
                )
            self._array_types[array_type] = record
            self._backends.set_type(array_type, coerced)
            epoch.advance()

        def undo() -> None:
            with self._lock:
                if record.alive:
                    record.alive = False
                    del self._array_types[array_type]
                    self._backends.remove_type(array_type)
                    epoch.advance()

        return RegistrationHandle(
            undo, description=f"array type {_type_name(array_type)}", source=source
        )

    def _same_name(self, array_type: type | str) -> Registration | None:
        """A registration of the same array type under its other spelling (class or name)."""
        name = array_type if isinstance(array_type, str) else _qualified(array_type)
        for registered, record in self._array_types.items():
            other = registered if isinstance(registered, str) else _qualified(registered)
            if other == name and registered != array_type:
                return record
        return None

    def _check_new_name(self, api: str, name: object) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise DispatchKeyError(
                f"{api}: backend name {name!r} is not an identifier. The name is used as a "
                "key name and a device type. Use letters, digits and underscores, like 'dask'."
            )
        taken = set(self._by_text) | set(self._backends.devices)
        autograd_form = f"Autograd{name[:1].upper()}{name[1:]}"
        if name in taken or autograd_form in taken:
            raise DispatchKeyError(
                f"{api}: backend name {name!r} is already a key name or device type. Names "
                "must be unique, or parsing a key name would be ambiguous. Pick another name."
            )


def coerce_array_keys(array_type: object, keys: object) -> KeysOf:
    """Validate ``register_array_type`` arguments; a backend key becomes backend + autograd."""
    api = "register_array_type"
    named = isinstance(array_type, str) and "." in array_type
    if not isinstance(array_type, type) and not named:
        raise TypeError(
            f"{api}: expected a class or its qualified name, got {array_type!r}. Calls look "
            "keys up by the type of each tensor argument. Pass the array class, e.g. "
            "numpy.ndarray, or its name 'numpy.ndarray' to avoid importing it."
        )
    if isinstance(keys, DispatchKey):
        if keys.is_alias:
            raise DispatchKeyError(
                f"{api}: {keys.name!r} is an alias key. A tensor carries runtime keys only. "
                f"Pass a runtime key such as one of: {', '.join(k.name for k in RUNTIME_KEYS[:6])}."
            )
        return DispatchKeySet.from_bits(backend_bits(keys))
    if isinstance(keys, DispatchKeySet):
        if not keys:
            raise DispatchKeyError(
                f"{api}: the key set for {_type_name(array_type)} is empty. A call needs at "
                "least one key per tensor to pick a kernel. Pass e.g. DispatchKey.CPU."
            )
        return keys
    if callable(keys):
        return keys
    raise TypeError(
        f"{api}: keys {keys!r} are not a DispatchKey, DispatchKeySet or function. The "
        "dispatcher needs the keys every instance carries. Pass e.g. DispatchKey.CUDA."
    )


def _qualified(array_type: type) -> str:
    return f"{array_type.__module__}.{array_type.__qualname__}"


def _type_name(array_type: object) -> str:
    return array_type if isinstance(array_type, str) else getattr(array_type, "__qualname__", "?")

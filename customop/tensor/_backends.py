"""Backend adapters: which device an array type lives on, its dispatch keys, how to make one.

The dispatcher only needs an array type's dispatch keys
(``Dispatcher.register_array_type``). The tensor layer also needs its device
(for fakes of real arrays, and for ``empty_like``) and a way to allocate new
arrays on that backend. `register_backend` records both and registers the
keys, in one step with one handle.

Adapters are kept per `Dispatcher`, like array types, so tests stay hermetic.
An array type is named by its class or by its qualified name
(``"torch.Tensor"``), which registers it without importing its library; a
lookup walks the instance type's MRO, trying each class and then its name.
``numpy.ndarray`` is in every table from the start (a `Dispatcher` registers
its keys itself); `FakeTensor` and the torch and cupy adapters are added by
`install_backends` (done for ``customop.dispatcher`` on import).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NoReturn, TypeAlias, final
from weakref import WeakKeyDictionary

from customop.dispatch import (
    DEFAULT_SOURCE,
    DEVICE_KEYS,
    Dispatcher,
    DispatchKey,
    DispatchKeySet,
    RegistrationHandle,
    RegistryLock,
    caller_source,
    epoch,
)
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import DispatchKeyError
from customop.tensor._device import Device, DeviceLike, to_device
from customop.tensor._dtype import dtype
from customop.tensor._fake import FakeTensor

__all__ = [
    "BUILTIN_DEVICES",
    "ArrayAdapter",
    "EmptyFn",
    "adapter_for",
    "adapter_table",
    "add_adapter",
    "backend_key",
    "device_keys_fn",
    "device_of",
    "numpy_empty",
    "register_backend",
    "type_name",
]

#: Allocates an array: ``empty(shape, dtype, device)`` with int sizes and a customop dtype.
EmptyFn: TypeAlias = Callable[[tuple[int, ...], dtype, Device], Any]

#: Device types of the built-in backends (the dispatcher's table).
BUILTIN_DEVICES: Final = DEVICE_KEYS
_PRIVATE_USE: Final = tuple(key for key in DispatchKey if key.is_private_use)


@final
class ArrayAdapter:
    """How customop handles one array type.

    ``array_type`` is the class or its qualified name (``"numpy.ndarray"``).
    ``device_type`` is the device type of every instance (``"cpu"`` for
    numpy), or None when it varies per instance (torch). ``device(array)``
    gives an instance's `Device`; ``empty`` allocates a new array of this type
    (None when the backend cannot, which makes ``empty_like`` of its arrays an
    error); ``source`` is where it was registered.
    """

    __slots__ = ("array_type", "device", "device_type", "empty", "source")

    def __init__(
        self,
        array_type: type | str,
        device_type: str | None,
        device: Callable[[Any], Device],
        empty: EmptyFn | None = None,
        source: str = "",
    ) -> None:
        self.array_type = array_type
        self.device_type = device_type
        self.device = device
        self.empty = empty
        self.source = source

    def __repr__(self) -> str:
        where = self.device_type or "per instance"
        return f"<ArrayAdapter {type_name(self.array_type)} on {where} at {self.source}>"


def numpy_empty(shape: tuple[int, ...], element: dtype, device: Device) -> Any:
    if device.type != "cpu":
        raise ValueError(
            f"empty: numpy arrays live on the cpu, not on {str(device)!r}. A numpy reference "
            "array can only make arrays on the cpu. Pass device='cpu', or make the array from "
            "a reference array of that device's backend."
        )
    import numpy  # noqa: PLC0415 -- numpy stays off `import customop`'s clock

    return numpy.empty(shape, dtype=element.numpy)


_CPU: Final = Device("cpu")
_NUMPY: Final = ArrayAdapter("numpy.ndarray", "cpu", lambda _: _CPU, numpy_empty, DEFAULT_SOURCE)

# Copy-on-write per dispatcher: readers never lock, writers replace a dispatcher's dict whole.
_lock = RegistryLock()
_tables: WeakKeyDictionary[Dispatcher, dict[type | str, ArrayAdapter]] = WeakKeyDictionary()


def adapter_table(dispatcher: Dispatcher) -> dict[type | str, ArrayAdapter]:
    """The adapters of ``dispatcher`` by array type (read-only: replaced whole on writes)."""
    table = _tables.get(dispatcher)
    if table is None:
        with _lock:
            table = _tables.setdefault(dispatcher, _default_table())
    return table


def _default_table() -> dict[type | str, ArrayAdapter]:
    return {_NUMPY.array_type: _NUMPY}


def adapter_for(value: object, *, dispatcher: Dispatcher | None = None) -> ArrayAdapter | None:
    """The adapter serving ``value`` (an array, or an array type), or None.

    Subclasses are served by their nearest registered base, as in dispatch.

    Args:
        value: an array or an array type.
        dispatcher: where backends are looked up; default: ``customop.dispatcher``.

    Returns:
        The adapter, or None for an unregistered type.
    """
    table = adapter_table(default_dispatcher if dispatcher is None else dispatcher)
    kind = value if isinstance(value, type) else type(value)
    for base in kind.__mro__:
        found = table.get(base) or table.get(f"{base.__module__}.{base.__qualname__}")
        if found is not None:
            return found
    return None


def device_of(array: object, *, dispatcher: Dispatcher | None = None) -> Device:
    """The `Device` of ``array``: a fake's own, else its backend adapter's answer.

    Args:
        array: an array of a registered type, or a fake.
        dispatcher: where backends are looked up; default: ``customop.dispatcher``.

    Returns:
        The device.
    """
    if isinstance(array, FakeTensor):
        return array.device
    adapter = adapter_for(array, dispatcher=dispatcher)
    if adapter is None:
        raise TypeError(
            f"device_of: {type(array).__qualname__} is not an array type of a registered "
            "backend. customop learns an array type's device from its backend adapter. "
            "Pass a numpy array, a FakeTensor, or register the type with register_backend."
        )
    return adapter.device(array)


def add_adapter(
    dispatcher: Dispatcher,
    adapter: ArrayAdapter,
    keys: DispatchKey | DispatchKeySet | Callable[[Any], DispatchKeySet],
) -> RegistrationHandle:
    """Record ``adapter`` and register its array type's ``keys``; one handle undoes both.

    For customop's own adapters (FakeTensor, torch, cupy): their source is
    ``adapter.source``, not the caller's line.
    """
    array_type = adapter.array_type
    keys_handle = dispatcher._add_array_type(array_type, keys, adapter.source)
    _store(dispatcher, adapter)
    return _handle(dispatcher, adapter, keys_handle)


def _store(dispatcher: Dispatcher, adapter: ArrayAdapter) -> None:
    with _lock:
        table = dict(_tables.get(dispatcher) or _default_table())
        table[adapter.array_type] = adapter
        _tables[dispatcher] = table


def _handle(
    dispatcher: Dispatcher, adapter: ArrayAdapter, keys_handle: RegistrationHandle
) -> RegistrationHandle:
    def undo() -> None:
        with _lock:
            table = dict(_tables.get(dispatcher) or {})
            if table.get(adapter.array_type) is adapter:
                del table[adapter.array_type]
                _tables[dispatcher] = table
        keys_handle.remove()

    return RegistrationHandle(
        undo, description=f"backend {type_name(adapter.array_type)}", source=adapter.source
    )


def type_name(array_type: type | str) -> str:
    """How messages name an array type: its qualified name."""
    if isinstance(array_type, str):
        return array_type
    return f"{array_type.__module__}.{array_type.__qualname__}"


def register_backend(
    array_type: type | str,
    device_type: str,
    key: DispatchKey | str | None = None,
    *,
    device: Callable[[Any], DeviceLike] | None = None,
    empty: EmptyFn | None = None,
    dispatcher: Dispatcher | None = None,
) -> RegistrationHandle:
    """Make ``array_type`` a tensor type on backend ``device_type``; return the undo handle.

    ``array_type`` is the class, or its qualified name (``"dask.array.Array"``),
    which registers it without importing its library.
    ``device_type`` is a built-in device type (``"cpu"``, ``"cuda"``) or the
    name of a renamed PrivateUse backend (``dispatcher.rename_backend(
    "PrivateUse1", "toy")`` first). The array type then dispatches to that
    backend's key and its autograd key; ``key``, if given, must be that key
    (it documents the intent and catches a missing rename). ``device(array)``
    gives an instance's device when it has an index (default: ``device_type``
    itself); ``empty(shape, dtype, device)`` lets ``empty_like`` / ``new_empty``
    make arrays of this type.

    Args:
        array_type: the array class, or its qualified name.
        device_type: the backend's device type.
        key: the backend's dispatch key, as a check.
        device: the device of an instance.
        empty: how to make a new array of this type.
        dispatcher: where to register; default: ``customop.dispatcher``.

    Returns:
        A handle whose ``remove()`` unregisters the type.

    Raises:
        RegistrationError: the type is registered already.
        DispatchKeyError: ``key`` is not ``device_type``'s key.
    """
    api = "register_backend"
    d = default_dispatcher if dispatcher is None else dispatcher
    if not isinstance(array_type, type) and not (isinstance(array_type, str) and "." in array_type):
        raise TypeError(
            f"{api}: expected a class or its qualified name, got {array_type!r}. Calls look up "
            "backends by the type of each tensor argument. Pass the array class, or a name "
            "such as 'dask.array.Array'."
        )
    _check_callable(api, "device", device)
    _check_callable(api, "empty", empty)
    backend = _resolve_key(d, device_type, key, api)
    fixed = Device(device_type)
    device_fn = _checked_device(device, device_type) if device is not None else lambda _: fixed
    adapter = ArrayAdapter(array_type, device_type, device_fn, empty, caller_source())
    return add_adapter(d, adapter, backend)


def _resolve_key(
    dispatcher: Dispatcher, device_type: object, key: DispatchKey | str | None, api: str
) -> DispatchKey:
    try:
        parsed = Device(device_type) if isinstance(device_type, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.index is not None:
        raise ValueError(
            f"{api}: device type {device_type!r} is not a device type. Every instance of the "
            "array type is on this backend; an instance's index comes from device=. Pass a "
            "type such as 'cpu', 'cuda' or a renamed backend's name, without an index."
        )
    found = backend_key(parsed.type, dispatcher)
    if found is None:
        _raise_unknown_device(api, parsed.type, dispatcher)
    if key is not None and dispatcher.parse_key(key, api=api) is not found:
        raise DispatchKeyError(
            f"{api}: device type {parsed.type!r} dispatches to "
            f"{dispatcher.key_name(found)!r}, not {key!r}. A backend's device type and key "
            f"go together. Pass key={dispatcher.key_name(found)!r} or leave key out."
        )
    return found


def _check_callable(api: str, name: str, fn: object) -> None:
    if fn is not None and not callable(fn):
        raise TypeError(
            f"{api}: {name}={fn!r} is not callable. customop calls it for each array it "
            "handles. Pass a function, or None."
        )


def _checked_device(fn: Callable[[Any], DeviceLike], device_type: str) -> Callable[[Any], Device]:
    def device(array: Any) -> Device:
        found = to_device(fn(array))
        if found.type != device_type:
            raise ValueError(
                f"device_of: the device function of {type(array).__qualname__} returned "
                f"{str(found)!r}, but the type is registered for device type {device_type!r}. "
                "An array type has one backend, so its instances share one device type. Fix "
                "the device= function passed to register_backend."
            )
        return found

    return device


def backend_key(device_type: str, dispatcher: Dispatcher) -> DispatchKey | None:
    """The backend key of ``device_type`` in ``dispatcher`` (renamed backends included)."""
    found = BUILTIN_DEVICES.get(device_type)
    if found is not None:
        return found
    for key in _PRIVATE_USE:
        if dispatcher.key_name(key) == device_type:
            return key
    return None


def _raise_unknown_device(api: str, device_type: str, dispatcher: Dispatcher) -> NoReturn:
    renamed = [dispatcher.key_name(k) for k in _PRIVATE_USE if dispatcher.key_name(k) != k.name]
    known = ", ".join(sorted({*BUILTIN_DEVICES, *renamed}))
    raise DispatchKeyError(
        f"{api}: device type {device_type!r} is not a backend of this dispatcher. A device "
        f"type must name a backend to pick kernels for it; known: {known}. Rename a "
        f"PrivateUse backend first: dispatcher.rename_backend('PrivateUse1', {device_type!r})."
    )


def device_keys_fn(
    dispatcher: Dispatcher, device_type_of: Callable[[Any], str], api: str
) -> Callable[[Any], DispatchKeySet]:
    """A key function for array types whose backend varies per instance (torch tensors).

    The keys are the backend and autograd keys of the instance's device type,
    cached per device type until the next registration change (a rename).
    """
    cache: dict[str, DispatchKeySet] = {}
    seen = [epoch.token]

    def keys(array: Any) -> DispatchKeySet:
        if seen[0] is not epoch.token:
            cache.clear()
            seen[0] = epoch.token
        kind = device_type_of(array)
        found = cache.get(kind)
        if found is None:
            key = backend_key(kind, dispatcher)
            if key is None:
                _raise_unknown_device(api, kind, dispatcher)
            autograd = key.autograd_key
            found = DispatchKeySet(key) if autograd is None else DispatchKeySet(key, autograd)
            cache[kind] = found
        return found

    return keys

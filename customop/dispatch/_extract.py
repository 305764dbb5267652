"""From call arguments to dispatch keys: the array-type registry and per-schema extractors.

An extractor is built once per schema (at def time) from the schema's tensor
positions and ``Device`` arguments, so a call only indexes ``args`` and looks
up ``type(value)`` in a dict.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from typing import Any, Final, NoReturn, TypeAlias, final

from customop.dispatch._keys import DispatchKey, DispatchKeySet
from customop.schema import BaseType, FunctionSchema, OptionalType, SchemaType

__all__ = [
    "DEFAULT_BITS",
    "DEVICE_KEYS",
    "BackendRegistry",
    "Extractor",
    "KeysOf",
    "make_extractor",
]

#: Maps call ``(args, kwargs)`` to the bits of the call's dispatch keys.
Extractor: TypeAlias = Callable[[tuple[Any, ...], dict[str, Any]], int]
#: What an array type is registered with: a fixed key set, or a function of the instance.
KeysOf: TypeAlias = DispatchKeySet | Callable[[Any], DispatchKeySet]

#: Keys of a call with no tensor and no device: a CPU call, as for a numpy array.
DEFAULT_BITS: Final = DispatchKeySet(DispatchKey.CPU, DispatchKey.AutogradCPU).bits

#: Device types of the built-in backends -> their key (renamed PrivateUse backends
#: add theirs per dispatcher). The one table: the tensor and library layers use it.
DEVICE_KEYS: Final[dict[str, DispatchKey]] = {
    "cpu": DispatchKey.CPU,
    "cuda": DispatchKey.CUDA,
    "privateuseone": DispatchKey.PrivateUse1,
    "privateusetwo": DispatchKey.PrivateUse2,
    "privateusethree": DispatchKey.PrivateUse3,
    "meta": DispatchKey.Meta,
}
_short_repr = reprlib.Repr()
_short_repr.maxstring = 40
_short_repr.maxother = 40


def backend_bits(key: DispatchKey) -> int:
    """A backend's key plus its autograd key: what a tensor on that backend carries."""
    autograd = key.autograd_key
    return DispatchKeySet(key, autograd).bits if autograd else DispatchKeySet(key).bits


@final
class BackendRegistry:
    """Array types and device names, mapped to dispatch keys; one per `Dispatcher`.

    ``fast`` is read by every call without a lock. Writers change it in place,
    one key at a time (a single dict store or delete is atomic), and a reader
    that misses falls back to `resolve`, which reads the authoritative
    ``exact`` mapping (replaced whole on every write).
    """

    __slots__ = ("devices", "exact", "fast")

    def __init__(self) -> None:
        # Keyed by the type, or by its qualified name ("numpy.ndarray") so that a
        # registration need not import the array library (import time, DESIGN §8).
        self.exact: dict[type | str, KeysOf] = {}
        self.fast: dict[type, int] = {}
        self.devices: dict[str, int] = {n: backend_bits(k) for n, k in DEVICE_KEYS.items()}

    def set_type(self, array_type: type | str, keys: KeysOf) -> None:
        exact = dict(self.exact)
        exact[array_type] = keys
        self._replace(exact)

    def remove_type(self, array_type: type | str) -> None:
        exact = dict(self.exact)
        del exact[array_type]
        self._replace(exact)

    def _replace(self, exact: dict[type | str, KeysOf]) -> None:
        self.exact = exact
        # Cached subclass resolutions may now be stale: drop them all. list() copies
        # the keys atomically; a call may be adding to ``fast`` meanwhile.
        for cached in [t for t in list(self.fast) if t not in exact]:
            self.fast.pop(cached, None)
        for array_type, keys in exact.items():
            if isinstance(array_type, str):
                continue  # resolved (and cached in fast) when an instance first shows up
            if isinstance(keys, DispatchKeySet):
                self.fast[array_type] = keys.bits
            else:
                self.fast.pop(array_type, None)

    def lookup(
        self, array_type: type, exact: dict[type | str, KeysOf] | None = None
    ) -> KeysOf | None:
        """The registration serving ``array_type``: its own, or its nearest base's."""
        exact = self.exact if exact is None else exact
        for base in array_type.__mro__:
            keys = exact.get(base)
            if keys is None:
                keys = exact.get(f"{base.__module__}.{base.__qualname__}")
            if keys is not None:
                return keys
        return None

    def resolve(self, value: object, op: str, arg: str) -> int:
        """Slow path of one tensor argument: dynamic keys, subclasses, or a type error."""
        exact = self.exact
        keys = self.lookup(type(value), exact)
        if keys is None:
            _raise_not_a_tensor(op, arg, value)
        if isinstance(keys, DispatchKeySet):
            self.fast[type(value)] = keys.bits
            if self.exact is not exact:
                # A writer replaced the registry meanwhile; this entry may be stale.
                self.fast.pop(type(value), None)
            return keys.bits
        return _dynamic_bits(keys, value, op, arg)

    def device(self, value: object, op: str, arg: str) -> int:
        """Keys of a ``Device`` argument: ``"cuda"``, ``"cuda:0"``, or anything with ``.type``."""
        name = getattr(value, "type", value)
        if isinstance(name, str):
            bits = self.devices.get(name.partition(":")[0])
            if bits is not None:
                return bits
        known = ", ".join(sorted(self.devices))
        raise DeviceValueError(
            f"{op}: device {_short_repr.repr(value)} of argument {arg!r} is unknown. "
            f"Ops with no tensor input dispatch on their Device argument, so its type "
            f"must name a backend. Known device types: {known}."
        )


def _dynamic_bits(
    keys_of: Callable[[Any], DispatchKeySet], value: object, op: str, arg: str
) -> int:
    keys = keys_of(value)
    if not isinstance(keys, DispatchKeySet) or not keys:
        raise TypeError(
            f"{op}: the key function registered for {type(value).__qualname__} returned "
            f"{keys!r} for argument {arg!r}. A call needs a non-empty DispatchKeySet per "
            "tensor. Fix the function passed to Dispatcher.register_array_type."
        )
    return keys.bits


def _raise_not_a_tensor(op: str, arg: str, value: object) -> NoReturn:
    raise TypeError(
        f"{op}: argument {arg!r} is a tensor argument, but got {type(value).__qualname__} "
        f"({_short_repr.repr(value)}). The dispatcher picks a kernel from the array type "
        "of every tensor argument. Pass an array of a registered type (numpy.ndarray is "
        "built in), or register the type with Dispatcher.register_array_type."
    )


def _is_device(tp: SchemaType) -> bool:
    # Exact type tests: isinstance on a pydantic model class is slow (ABCMeta).
    inner = tp.elem if type(tp) is OptionalType else tp
    return type(inner) is BaseType and inner.name == "Device"


def make_extractor(schema: FunctionSchema, registry: BackendRegistry, op: str) -> Extractor:
    """Build the function that computes a call's keys for ``schema``."""
    tensors: list[tuple[int, str, str]] = []
    devices: list[tuple[int, str]] = []
    for index, arg in enumerate(schema.arguments):
        kind = arg.tensor_kind
        if kind is not None:
            tensors.append((index, arg.name, kind))
        elif _is_device(arg.type):
            devices.append((index, arg.name))
    plain = not devices and all(kind == "tensor" for _, _, kind in tensors)
    if plain and len(tensors) == 1:
        return _single_tensor(tensors[0][0], tensors[0][1], registry, op)
    if plain and len(tensors) == 2:
        return _two_tensors(tensors[0][:2], tensors[1][:2], registry, op)
    return _general(tuple(tensors), tuple(devices), registry, op)


# NOTE: the extractors below take their per-op constants as keyword-only
# defaulted parameters, not closure cells. Every def makes one, so this saves a cell per
# constant (objects the garbage collector scans for as long as the op lives),
# and a call reads them as plain locals. Callers pass only (args, kwargs).


def _single_tensor(index: int, name: str, registry: BackendRegistry, op: str) -> Extractor:
    def extract(
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        index: int = index,
        name: str = name,
        fast: dict[type, int] = registry.fast,
        registry: BackendRegistry = registry,
        op: str = op,
    ) -> int:
        value = args[index] if len(args) > index else kwargs.get(name)
        bits = fast.get(type(value))
        return bits if bits is not None else registry.resolve(value, op, name)

    return extract


def _two_tensors(
    first: tuple[int, str], second: tuple[int, str], registry: BackendRegistry, op: str
) -> Extractor:
    # Two tensors is the commonest binary-op shape; unrolled, it costs about half the loop.
    def extract(
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        tensors: tuple[int, str, int, str] = (*first, *second),
        fast: dict[type, int] = registry.fast,
        registry: BackendRegistry = registry,
        op: str = op,
    ) -> int:
        i, name_i, j, name_j = tensors
        count = len(args)
        a = args[i] if count > i else kwargs.get(name_i)
        b = args[j] if count > j else kwargs.get(name_j)
        bits_a = fast.get(type(a))
        if bits_a is None:
            bits_a = registry.resolve(a, op, name_i)
        bits_b = fast.get(type(b))
        if bits_b is None:
            bits_b = registry.resolve(b, op, name_j)
        return bits_a | bits_b

    return extract


def _general(
    tensors: tuple[tuple[int, str, str], ...],
    devices: tuple[tuple[int, str], ...],
    registry: BackendRegistry,
    op: str,
) -> Extractor:
    fast_get = registry.fast.get
    resolve = registry.resolve

    def keys_of(value: object, name: str) -> int:
        bits = fast_get(type(value))
        return bits if bits is not None else resolve(value, op, name)

    def extract(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
        bits = 0
        count = len(args)
        for index, name, kind in tensors:
            value = args[index] if index < count else kwargs.get(name)
            if kind == "tensor":
                bits |= keys_of(value, name)
            elif value is None:
                continue
            elif kind == "optional":
                bits |= keys_of(value, name)
            else:
                for item in value:
                    if item is not None or kind == "list":
                        bits |= keys_of(item, name)
        return bits or _device_bits(args, kwargs)

    def _device_bits(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
        count = len(args)
        for index, name in devices:
            value = args[index] if index < count else kwargs.get(name)
            if value is not None:
                return registry.device(value, op, name)
        return DEFAULT_BITS

    return extract


class DeviceValueError(TypeError, ValueError):
    """A Device argument naming no backend: a bad argument (TypeError, as the call
    checks report it) with a bad value (ValueError, as earlier releases raised)."""

"""Dispatch keys and key sets.

`DispatchKey` lists every key in priority order, lowest first: a key's
``value`` is its priority, and for a runtime key also its bit in a
`DispatchKeySet` and its slot in an operator's dispatch table. Alias keys come
last; they never run, and stand for their ``expansion`` (a set of runtime keys).

`DispatchKeySet` is an immutable bitset over the runtime keys, backed by one
``int`` so that set algebra costs one integer operation.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import Enum
from typing import Any, Final, NoReturn, final

from customop.exceptions import DispatchKeyError
from customop.schema import close_matches

__all__ = [
    "FULL_BITS",
    "NUM_RUNTIME_KEYS",
    "RUNTIME_KEYS",
    "DispatchKey",
    "DispatchKeySet",
    "below",
    "keyset_from_bits",
]


# NOTE: on Python 3.10 and 3.11, `DispatchKey.CPU` costs ~90 ns (a plain class attribute
# ~15): EnumType defines __getattr__, so CPython reads class attributes through its slow
# slot hook, and no metaclass can opt out (the hook stays while any class in the
# metaclass's MRO defines __getattr__). Python 3.12 removed it; hot code reads keys once.
class DispatchKey(Enum):
    """A dispatch key. Members are in priority order, lowest first; ``value`` is the priority.

    Backends (``CPU`` .. ``Meta``) come first, then the functionality keys
    (``Fake``, one ``Autograd<Backend>`` per backend plus ``AutogradOther``,
    ``Tracer``, ``Batched``, ``Python``), then the alias keys, which expand to runtime keys
    (see `expansion`) and are only used to register kernels.
    """

    CPU = 0
    CUDA = 1
    PrivateUse1 = 2
    PrivateUse2 = 3
    PrivateUse3 = 4
    Meta = 5
    Fake = 6
    AutogradCPU = 7
    AutogradCUDA = 8
    AutogradPrivateUse1 = 9
    AutogradPrivateUse2 = 10
    AutogradPrivateUse3 = 11
    AutogradMeta = 12
    AutogradOther = 13
    Tracer = 14
    Batched = 15
    Python = 16
    CompositeExplicitAutograd = 17
    CompositeImplicitAutograd = 18
    Autograd = 19

    # Members are singletons compared by identity; the identity hash is C-level, where
    # Enum's own hashes the name in Python, and tables are keyed by keys.
    __hash__ = object.__hash__

    @property
    def is_alias(self) -> bool:
        """True for the keys that only stand for others (never in a `DispatchKeySet`)."""
        return self.value >= NUM_RUNTIME_KEYS

    @property
    def is_backend(self) -> bool:
        """Whether this is a backend key (``CPU`` ... ``Meta``): one that picks a device."""
        return self in _BACKENDS

    @property
    def is_autograd(self) -> bool:
        """True for the runtime ``Autograd*`` keys (not the ``Autograd`` alias)."""
        return self in _AUTOGRAD_BACKENDS

    @property
    def is_private_use(self) -> bool:
        """Whether this is one of the ``PrivateUse1..3`` keys that user backends can rename."""
        return self in _PRIVATE_USE

    @property
    def expansion(self) -> DispatchKeySet:
        """The runtime keys this key stands for: itself for a runtime key."""
        return keyset_from_bits(_EXPANSION_BITS.get(self, 1 << self.value))

    @property
    def autograd_key(self) -> DispatchKey | None:
        """The ``Autograd*`` key of a backend key (``CPU`` -> ``AutogradCPU``), else None."""
        return _AUTOGRAD_OF.get(self)

    @property
    def backend_keys(self) -> DispatchKeySet:
        """The backends an ``Autograd*`` key serves (empty for AutogradOther and other keys)."""
        return DispatchKeySet(*_AUTOGRAD_BACKENDS.get(self, ()))

    @classmethod
    def from_name(cls, name: str, *, api: str = "DispatchKey.from_name") -> DispatchKey:
        """The key named ``name`` (``"CPU"``); raises `DispatchKeyError` with close matches.

        Args:
            name: the key's name, e.g. ``"CPU"`` or ``"AutogradCPU"``.
            api: the API to name in the error message.

        Returns:
            The key.

        Raises:
            DispatchKeyError: no key has that name (the message lists close matches).
        """
        key = _BY_NAME.get(name) if isinstance(name, str) else None
        if key is None:
            raise_unknown_key(api, name, _BY_NAME)
        return key

    def __repr__(self) -> str:
        return f"DispatchKey.{self.name}"


_BACKENDS: Final = (
    DispatchKey.CPU,
    DispatchKey.CUDA,
    DispatchKey.PrivateUse1,
    DispatchKey.PrivateUse2,
    DispatchKey.PrivateUse3,
    DispatchKey.Meta,
)
_PRIVATE_USE: Final = (DispatchKey.PrivateUse1, DispatchKey.PrivateUse2, DispatchKey.PrivateUse3)
_AUTOGRAD_OF: Final[dict[DispatchKey, DispatchKey]] = {
    backend: DispatchKey[f"Autograd{backend.name}"] for backend in _BACKENDS
}
# AutogradOther serves backends with no Autograd key of their own; customop has none yet.
_AUTOGRAD_BACKENDS: Final[dict[DispatchKey, tuple[DispatchKey, ...]]] = {
    **{autograd: (backend,) for backend, autograd in _AUTOGRAD_OF.items()},
    DispatchKey.AutogradOther: (),
}
_BY_NAME: Final[dict[str, DispatchKey]] = {key.name: key for key in DispatchKey}

#: How many keys can be in a set (the runtime keys), and the set of all of them.
NUM_RUNTIME_KEYS: Final = DispatchKey.CompositeExplicitAutograd.value  # the first alias key
FULL_BITS: Final = (1 << NUM_RUNTIME_KEYS) - 1
RUNTIME_KEYS: Final = tuple(key for key in DispatchKey if key.value < NUM_RUNTIME_KEYS)


def _bits(keys: Iterable[DispatchKey]) -> int:
    bits = 0
    for key in keys:
        bits |= 1 << key.value
    return bits


_BACKEND_BITS: Final = _bits(_BACKENDS)
_AUTOGRAD_BITS: Final = _bits(_AUTOGRAD_BACKENDS)
# The alias expansions, as PyTorch's getRuntimeDispatchKeySet gives them, plus Fake
# under CompositeImplicitAutograd: a decomposition computes fake outputs too.
_EXPANSION_BITS: Final[dict[DispatchKey, int]] = {
    DispatchKey.CompositeExplicitAutograd: _BACKEND_BITS,
    DispatchKey.CompositeImplicitAutograd: (
        _BACKEND_BITS | _AUTOGRAD_BITS | 1 << DispatchKey.Fake.value
    ),
    DispatchKey.Autograd: _AUTOGRAD_BITS,
}


def raise_unknown_key(api: str, name: object, known: Iterable[str]) -> NoReturn:
    """Raise the one error for a key name that no key has."""
    names = list(known)
    # 'cpu' (a device type) is the commonest slip: match case-insensitively first.
    close = [n for n in names if n.lower() == str(name).lower()]
    close = close or close_matches(str(name), names, n=1)
    hint = f"Did you mean {close[0]!r}? " if close else ""
    raise DispatchKeyError(
        f"{api}: dispatch key {name!r} is unknown. Kernels, fallbacks and key sets "
        f"are keyed by dispatch key, so the name must be one the dispatcher knows. "
        f"{hint}Known keys: {', '.join(names)}."
    )


def _to_bits(value: DispatchKey | DispatchKeySet, api: str) -> int:
    if isinstance(value, DispatchKeySet):
        return value._bits
    if isinstance(value, DispatchKey):
        return _EXPANSION_BITS.get(value, 1 << value.value)
    raise TypeError(
        f"{api}: expected a DispatchKey or DispatchKeySet, got {value!r}. "
        "Key sets combine only with keys and key sets. "
        "Convert a name with DispatchKey.from_name first."
    )


@final
class DispatchKeySet:
    """An immutable set of runtime dispatch keys, backed by an ``int``.

    ``DispatchKeySet(DispatchKey.CPU, DispatchKey.AutogradCPU)`` builds one;
    an alias key stands for its `DispatchKey.expansion`. Sets support ``|``,
    ``&``, ``-``, ``^``, ``~`` (complement within the runtime keys), ``in``,
    ``<=`` (subset), ``len`` and iteration from the lowest-priority key to the
    highest, like `DispatchKey` itself.
    """

    __slots__ = ("_bits",)
    _bits: int

    def __init__(self, *keys: DispatchKey) -> None:
        bits = 0
        for key in keys:
            if not isinstance(key, DispatchKey):
                raise TypeError(
                    f"DispatchKeySet: expected DispatchKey members, got {key!r}. "
                    "A key set holds dispatch keys only. "
                    "Convert a name with DispatchKey.from_name first."
                )
            bits |= _EXPANSION_BITS.get(key, 1 << key.value)
        object.__setattr__(self, "_bits", bits)

    @classmethod
    def from_bits(cls, bits: int) -> DispatchKeySet:
        """The set whose bit ``i`` is the runtime key of value ``i``.

        Args:
            bits: the bitmask, as `bits` returns it.

        Returns:
            The set.
        """
        if not isinstance(bits, int) or bits < 0 or bits > FULL_BITS:
            raise DispatchKeyError(
                f"DispatchKeySet.from_bits: {bits!r} is not a key-set bit pattern. "
                f"Bit i stands for the runtime key of value i, and there are "
                f"{NUM_RUNTIME_KEYS} runtime keys. Pass an int from 0 to {FULL_BITS}."
            )
        return keyset_from_bits(bits)

    @classmethod
    def full(cls) -> DispatchKeySet:
        """Every runtime key.

        Returns:
            The set of all runtime keys.
        """
        return keyset_from_bits(FULL_BITS)

    @property
    def bits(self) -> int:
        """The set as an ``int`` bitmask, one bit per key in priority order."""
        return self._bits

    def highest(self) -> DispatchKey:
        """The key with the highest priority: the one whose kernel a call runs.

        Returns:
            The highest key.

        Raises:
            DispatchKeyError: the set is empty.
        """
        if not self._bits:
            raise DispatchKeyError(
                "DispatchKeySet.highest: the set is empty. Only a non-empty set has a "
                "highest key. Check the set with bool(keyset) first."
            )
        return RUNTIME_KEYS[self._bits.bit_length() - 1]

    def below(self, key: DispatchKey) -> DispatchKeySet:
        """The keys of this set with lower priority than ``key`` (what a kernel redispatches to).

        Args:
            key: the key whose kernel is running.

        Returns:
            The keys of this set below ``key``.

        Raises:
            DispatchKeyError: ``key`` is not a runtime dispatch key.
        """
        # Boxed fallbacks call this on every call: two dict hits, no other call.
        try:
            return _BELOW[key][self._bits]
        except (KeyError, TypeError):  # not a runtime key (TypeError: not even hashable)
            pass
        _not_runtime(key)

    def __or__(self, other: DispatchKey | DispatchKeySet) -> DispatchKeySet:
        return keyset_from_bits(self._bits | _to_bits(other, "DispatchKeySet |"))

    __ror__ = __or__

    def __and__(self, other: DispatchKey | DispatchKeySet) -> DispatchKeySet:
        return keyset_from_bits(self._bits & _to_bits(other, "DispatchKeySet &"))

    __rand__ = __and__

    def __sub__(self, other: DispatchKey | DispatchKeySet) -> DispatchKeySet:
        return keyset_from_bits(self._bits & ~_to_bits(other, "DispatchKeySet -"))

    def __xor__(self, other: DispatchKey | DispatchKeySet) -> DispatchKeySet:
        return keyset_from_bits(self._bits ^ _to_bits(other, "DispatchKeySet ^"))

    __rxor__ = __xor__

    def __invert__(self) -> DispatchKeySet:
        return keyset_from_bits(FULL_BITS & ~self._bits)

    def __le__(self, other: DispatchKeySet) -> bool:
        return isinstance(other, DispatchKeySet) and self._bits & ~other._bits == 0

    def __ge__(self, other: DispatchKeySet) -> bool:
        return isinstance(other, DispatchKeySet) and other._bits & ~self._bits == 0

    def __contains__(self, key: object) -> bool:
        """``key in ks``; for an alias key, whether its whole expansion is in the set."""
        if not isinstance(key, DispatchKey):
            return False
        bits = _EXPANSION_BITS.get(key, 1 << key.value)
        return self._bits & bits == bits

    def __iter__(self) -> Iterator[DispatchKey]:
        bits = self._bits
        return (key for key in RUNTIME_KEYS if bits >> key.value & 1)

    def __reversed__(self) -> Iterator[DispatchKey]:
        bits = self._bits
        return (key for key in reversed(RUNTIME_KEYS) if bits >> key.value & 1)

    def __len__(self) -> int:
        return self._bits.bit_count()

    def __bool__(self) -> bool:
        return self._bits != 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DispatchKeySet) and other._bits == self._bits

    def __hash__(self) -> int:
        return hash((DispatchKeySet, self._bits))

    def __repr__(self) -> str:
        return f"DispatchKeySet({', '.join(key.name for key in self)})"

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"DispatchKeySet is immutable; cannot set {name!r}.")

    def __reduce__(self) -> tuple[Any, tuple[int]]:
        return (keyset_from_bits, (self._bits,))


# Key sets are interned by bits: boxed kernels get one per call, and a dict hit is
# several times cheaper than building an object. Few distinct sets occur in practice;
# the cap keeps a pathological caller from growing the cache without bound.
_INTERNED: dict[int, DispatchKeySet] = {}
_INTERN_CAP: Final = 4096
_new = object.__new__
_set = object.__setattr__


def keyset_from_bits(bits: int) -> DispatchKeySet:
    """The (interned) set for ``bits``; callers guarantee ``0 <= bits <= FULL_BITS``."""
    keyset = _INTERNED.get(bits)
    if keyset is None:
        keyset = _new(DispatchKeySet)
        _set(keyset, "_bits", bits)
        if len(_INTERNED) < _INTERN_CAP:
            _INTERNED[bits] = keyset
    return keyset


def below(key: DispatchKey) -> DispatchKeySet:
    """Every runtime key with lower priority than ``key``.

    A boxed kernel on ``key`` redispatches with ``keyset & below(key)`` (or
    ``keyset.below(key)``) to run the next kernel down.

    Args:
        key: the key whose kernel is running.

    Returns:
        The set of lower-priority runtime keys.
    """
    if not isinstance(key, DispatchKey) or key.is_alias:
        _not_runtime(key)
    return keyset_from_bits((1 << key.value) - 1)


def _not_runtime(key: object) -> NoReturn:
    raise DispatchKeyError(
        f"below: {key!r} is not a runtime dispatch key. Only runtime keys have a "
        "place in the priority order. Pass the key your kernel runs on, such as "
        "DispatchKey.AutogradCPU."
    )


@final
class _BelowOf(dict[int, DispatchKeySet]):
    """The sets below one runtime key, by the bits of the set they are taken from;
    filled on first use (few distinct sets occur), up to the interning cap."""

    __slots__ = ("mask",)

    def __init__(self, key: DispatchKey) -> None:
        super().__init__()
        self.mask = (1 << key.value) - 1

    def __missing__(self, bits: int) -> DispatchKeySet:
        keyset = keyset_from_bits(bits & self.mask)
        if len(self) < _INTERN_CAP:
            self[bits] = keyset
        return keyset


#: What `DispatchKeySet.below` reads: ``_BELOW[key][bits]``.
_BELOW: Final[dict[DispatchKey, _BelowOf]] = {key: _BelowOf(key) for key in RUNTIME_KEYS}

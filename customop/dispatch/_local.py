"""Per-context included / excluded keys, and the epoch clock for cached call paths.

NOTE: contextvars, not threading.local. Both give each thread its own sets (a
new thread starts with an empty context), but only contextvars also give each
asyncio task its own: a task copies its parent's context when created, so an
``include_keys`` block inside one task is invisible to the others even though
they share a thread. A `ContextVar.get` is also about 4x cheaper than a
``threading.local`` attribute read, and every call reads it.
"""

from __future__ import annotations

import threading
import weakref
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, Final, Protocol, final

from customop.dispatch._keys import FULL_BITS, DispatchKey, DispatchKeySet, keyset_from_bits

__all__ = [
    "DEFAULT_LOCAL",
    "LOCAL_KEYS",
    "CacheHolder",
    "Epoch",
    "EpochClock",
    "LocalKeys",
    "LocalKeysGuard",
    "epoch",
    "exclude_keys",
    "include_keys",
    "local_keys",
    "local_state",
]


@final
class LocalKeys:
    """A context's local keys: ``included`` bits and ``kept`` bits, where kept is
    all keys minus the excluded ones, so a call applies both with
    ``(keys | included) & kept``. Compared by identity, never mutated; one
    object per distinct pair while it lives (see `LocalState.new_value`)."""

    __slots__ = ("__weakref__", "included", "kept")

    def __init__(self, included: int, kept: int) -> None:
        self.included = included
        self.kept = kept

    def __repr__(self) -> str:
        return f"<LocalKeys included={self.included:#x} kept={self.kept:#x}>"


#: The local keys of every context that never entered a block.
DEFAULT_LOCAL: Final = LocalKeys(0, FULL_BITS)

LOCAL_KEYS: Final[ContextVar[LocalKeys]] = ContextVar(
    "customop.dispatch.local_keys", default=DEFAULT_LOCAL
)


@final
class LocalState:
    """Whether every context, in every thread and task, has the default local keys.

    ``default`` is `DEFAULT_LOCAL` while no other local-keys value exists, else
    None. Generated call code compares its cached local keys with it first and
    reads the ContextVar (about 15 ns more) only when that fails. A value
    lives as long as some context (or a cache entry) holds it, a copied
    context included: an asyncio task created inside a block keeps the
    block's keys after the block ends, so counting blocks would not do; a
    weak reference to each value says when it is gone.

    NOTE: values are interned while they live: every ``include_keys(Fake)``
    block in the same context gets the same object, so call caches filled in
    one block (keyed on the value's identity) still match in the next: a
    loop that opens a FakeTensorMode per step keeps the fast path.
    """

    __slots__ = ("_live", "_lock", "default")

    def __init__(self) -> None:
        # Re-entrant: a value can die (and `_gone` run) in a garbage collection
        # triggered by an allocation made while this thread holds the lock.
        self._lock = threading.RLock()
        self._live: dict[tuple[int, int], weakref.ref[LocalKeys]] = {}
        self.default: LocalKeys | None = DEFAULT_LOCAL

    def new_value(self, included: int, kept: int) -> LocalKeys:
        with self._lock:
            ref = self._live.get((included, kept))
            value = ref() if ref is not None else None
            if value is None:
                value = LocalKeys(included, kept)
                self._live[(included, kept)] = weakref.ref(value, self._gone)
            self.default = None
        return value

    def _gone(self, ref: weakref.ref[LocalKeys]) -> None:
        with self._lock:
            live = self._live
            for pair, held in list(live.items()):
                if held is ref:
                    del live[pair]
            if not live:
                self.default = DEFAULT_LOCAL


#: The process-wide record of live local-keys values.
local_state: Final = LocalState()


@final
class Epoch:
    """One state of the registry: a token compared by identity, never mutated."""

    __slots__ = ("number",)

    def __init__(self, number: int) -> None:
        self.number = number

    def __repr__(self) -> str:
        return f"<Epoch {self.number}>"


class CacheHolder(Protocol):
    """What `EpochClock.fill` fills: an object with a ``cache``, and a way to empty it."""

    cache: Any

    def clear_cache(self) -> None: ...


@final
class EpochClock:
    """The registration epoch shared by every `Dispatcher`, for cached fast call paths.

    ``token`` is replaced by a new `Epoch` on every registration change in any
    dispatcher; include/exclude blocks never replace it (call caches key on
    the local keys instead, see `LocalState`). Caches relate to it in one of
    two ways:

    * pull: keep the token the entry was computed under (read *before*
      computing it) and use the entry while ``epoch.token is kept_token``;
    * push: `fill` a `CacheHolder` under ``calls`` (read before computing);
      the next `advance` empties it. Generated call code uses this, so its
      fast path does not even read the token.

    ``calls`` is ``token``, or a newer `Epoch` after `debug_checks` began:
    checked calls must leave the fast path, so the first debug block empties
    the filled call caches without touching registration caches.
    """

    __slots__ = ("_active", "_filled", "_lock", "_next", "calls", "token")

    def __init__(self) -> None:
        # Reentrant: the garbage collector may run a finalizer (Library.__del__
        # closes the library, which advances the epoch) inside a locked region.
        self._lock = threading.RLock()
        self._next = 1
        self._active = 0
        # Weak: a filled cache must not keep its op (and a private dispatcher) alive.
        self._filled: weakref.WeakSet[CacheHolder] = weakref.WeakSet()
        self.token = self.calls = Epoch(0)

    @property
    def cacheable(self) -> bool:
        """Whether no `debug_checks` block is active (calls may fill caches)."""
        return self._active == 0

    def advance(self) -> None:
        """Start a new epoch (every registration change calls this)."""
        with self._lock:
            self.token = self._clear_calls()

    def fill(self, token: Epoch, holder: CacheHolder, cache: object) -> None:
        """Set ``holder.cache`` to an entry computed under ``token`` (read from
        ``calls``), unless the call caches were emptied since; it is emptied
        when the epoch next advances.

        Args:
            token: the epoch the entry was computed under.
            holder: the object whose ``cache`` attribute to set.
            cache: the entry.
        """
        with self._lock:
            if self.calls is token:
                holder.cache = cache
                self._filled.add(holder)

    def forget(self, holder: CacheHolder) -> None:
        """Stop tracking ``holder`` (its op is gone); empties its cache."""
        with self._lock:
            self._filled.discard(holder)
            holder.clear_cache()

    def _clear_calls(self) -> Epoch:
        self.calls = Epoch(self._next)
        self._next += 1
        filled, self._filled = self._filled, weakref.WeakSet()
        for holder in list(filled):
            holder.clear_cache()
        return self.calls

    def _local_block(self, delta: int) -> None:
        """A `debug_checks` block starts (+1) or ends (-1)."""
        with self._lock:
            before = self._active
            self._active += delta
            if before == 0 and self._active > 0:
                self._clear_calls()


#: The process-wide epoch clock.
epoch: Final = EpochClock()


def _bits_of(keys: tuple[DispatchKey | DispatchKeySet, ...], api: str) -> int:
    bits = 0
    for key in keys:
        if isinstance(key, DispatchKeySet):
            bits |= key.bits
        elif isinstance(key, DispatchKey):
            bits |= key.expansion.bits
        else:
            raise TypeError(
                f"{api}: expected DispatchKey or DispatchKeySet arguments, got {key!r}. "
                "Local key sets hold dispatch keys only. "
                "Convert a name with DispatchKey.from_name first."
            )
    return bits


@final
class LocalKeysGuard:
    """Context manager that adds keys to the current context's included or excluded set.

    Entering it again while it is active nests; each exit restores the sets
    that were current at the matching entry.
    """

    __slots__ = ("_bits", "_exclude", "_tokens")

    def __init__(self, bits: int, *, exclude: bool) -> None:
        self._bits = bits
        self._exclude = exclude
        self._tokens: list[Token[LocalKeys]] = []

    @property
    def keys(self) -> DispatchKeySet:
        """The keys this guard includes or excludes while active."""
        return keyset_from_bits(self._bits)

    def __enter__(self) -> DispatchKeySet:
        local = LOCAL_KEYS.get()
        included, kept = local.included, local.kept
        if self._exclude:
            value = local_state.new_value(included, kept & ~self._bits)
        else:
            value = local_state.new_value(included | self._bits, kept)
        self._tokens.append(LOCAL_KEYS.set(value))
        return keyset_from_bits(self._bits)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        LOCAL_KEYS.reset(self._tokens.pop())

    def __repr__(self) -> str:
        kind = "exclude_keys" if self._exclude else "include_keys"
        return f"{kind}({', '.join(key.name for key in self.keys)})"


def include_keys(*keys: DispatchKey | DispatchKeySet) -> LocalKeysGuard:
    """``with include_keys(DispatchKey.Fake): ...`` adds keys to every call in the block.

    Calls compute ``(tensor keys | included) - excluded``; an alias key stands
    for its expansion. The sets belong to the current thread and asyncio task.

    Args:
        *keys: keys or key sets to include.

    Returns:
        A context manager.
    """
    return LocalKeysGuard(_bits_of(keys, "include_keys"), exclude=False)


def exclude_keys(*keys: DispatchKey | DispatchKeySet) -> LocalKeysGuard:
    """``with exclude_keys(DispatchKey.Autograd): ...`` removes keys from every call in the block.

    Exclusion wins over inclusion, as in PyTorch.

    Args:
        *keys: keys or key sets to exclude.

    Returns:
        A context manager.
    """
    return LocalKeysGuard(_bits_of(keys, "exclude_keys"), exclude=True)


def local_keys() -> tuple[DispatchKeySet, DispatchKeySet]:
    """The current context's ``(included, excluded)`` key sets.

    Returns:
        The included and the excluded key sets.
    """
    local = LOCAL_KEYS.get()
    return keyset_from_bits(local.included), keyset_from_bits(FULL_BITS & ~local.kept)

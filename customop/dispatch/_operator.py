"""`OperatorHandle`: a registered operator, callable. The call path lives here.

A call reads the handle's state tuple once, computes the key bits, and indexes
the table: no lock, no dict of kernels, no parsing. See `_entry` for why reading
``_state`` once is enough under concurrent registration.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar, final

from customop.dispatch._keys import DispatchKey, DispatchKeySet, keyset_from_bits
from customop.dispatch._local import LOCAL_KEYS
from customop.dispatch._messages import missing_kernel_error, no_schema_error
from customop.schema import FunctionSchema, OperatorName

if TYPE_CHECKING:
    from customop.dispatch._dispatcher import Dispatcher
    from customop.dispatch._entry import CallState, OperatorEntry
    from customop.dispatch._extras import Extra
    from customop.dispatch._models import TableEntry

__all__ = [
    "OperatorHandle",
    "is_live_kernel",
    "missing_kernel",
    "select_kernel",
    "undefined_kernel",
]

_local_get: Final = LOCAL_KEYS.get
T = TypeVar("T")


@final
class OperatorHandle:
    """A registered operator: ``handle(*args, **kwargs)`` dispatches and runs a kernel.

    The handle stays valid across registrations: it always calls through the
    operator's current table. Get one with `Dispatcher.find_op`.
    """

    __slots__ = ("__weakref__", "_entry", "_state")

    def __init__(self, entry: OperatorEntry, state: CallState) -> None:
        self._entry = entry
        self._state = state

    @property
    def name(self) -> OperatorName:
        """The operator's name (namespace, name and overload)."""
        return self._entry.name

    @property
    def schema(self) -> FunctionSchema:
        """The schema; raises `UnknownOperatorError` when the op's def has been removed."""
        schema = self._entry.schema
        if schema is None:
            raise no_schema_error(f"{self._entry.name}.schema", str(self._entry.name))
        return schema

    @property
    def has_schema(self) -> bool:
        """Whether the operator has a def (a schema); one with only impls has none."""
        return self._entry.schema is not None

    @property
    def tags(self) -> tuple[str, ...]:
        """The tags given when the operator was defined."""
        return self._entry.tags

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher that holds this operator."""
        return self._entry.dispatcher

    def frozen(self) -> OperatorHandle:
        """A handle that calls through this op's table as it is now, whatever comes later.

        A registration replaces the live handle's state (table, mask, key extractor)
        whole, so a handle holding the current state keeps calling this
        generation's kernels, boxed ones included (they get the frozen handle,
        whose ``redispatch`` reads the same state). Graphs built now and run later
        (``customop.dask``) call through one.

        Returns:
            The frozen handle; its `generation` names the state it holds.
        """
        return OperatorHandle(self._entry, self._state)

    @property
    def generation(self) -> int:
        """A token of the registrations this handle calls through now: it changes with
        every registration change of the op (and is stable on a `frozen` handle)."""
        return id(self._state)

    def registered_kernel(self, key: DispatchKey) -> Callable[..., Any] | None:
        """The newest kernel registered on ``key`` itself (no table precedence), or None.

        Args:
            key: a dispatch key (alias keys included).

        Returns:
            The kernel as registered, or None.
        """
        stack = self._entry.kernels.get(key)
        return stack[0].fn if stack else None

    def kernel_keys(self) -> frozenset[DispatchKey]:
        """The keys that have a registered kernel for this op (alias keys included).

        Returns:
            The keys, e.g. ``{CPU, Fake}``.
        """
        return frozenset(self._entry.kernels)

    def extra(self, extra: Extra[T]) -> T | None:
        """The newest value registered for ``extra`` on this op, or None.

        Args:
            extra: the slot, as its owning subsystem declared it.

        Returns:
            The value (see `Dispatcher.register_extra`), or None if there is none.
        """
        for record in self._entry.extras:
            if record.extra is extra:
                return record.value  # type: ignore[no-any-return]
        return None

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        table, mask, extract = self._state
        local = _local_get()
        bits = (extract(args, kwargs) | local.included) & local.kept & mask
        # An empty set gives index -1: the table's last slot, which reports the error.
        fn, boxed = table[bits.bit_length() - 1]
        if boxed:
            return fn(self, keyset_from_bits(bits), *args, **kwargs)
        # NOTE: `f(*args, **kwargs)` copies kwargs into a new dict even when it is
        # empty; most calls pass none, and `f(*args)` skips the copy.
        return fn(*args, **kwargs) if kwargs else fn(*args)

    def redispatch(self, keyset: DispatchKeySet, /, *args: Any, **kwargs: Any) -> Any:
        """Run the kernel for ``keyset`` (minus fallthrough keys), skipping key extraction.

        A boxed kernel on key ``k`` calls ``op.redispatch(keyset.below(k), ...)``
        to run the next kernel down. The local include/exclude sets are not
        applied again: ``keyset`` already went through them.

        Args:
            keyset: the keys to dispatch on.
            *args: the op's arguments.
            **kwargs: the op's keyword arguments.

        Returns:
            What the selected kernel returns.
        """
        table, mask, _ = self._state
        bits = keyset._bits & mask
        fn, boxed = table[bits.bit_length() - 1]
        if boxed:
            return fn(self, keyset_from_bits(bits), *args, **kwargs)
        return fn(*args, **kwargs) if kwargs else fn(*args)  # see __call__

    def dispatch_keyset(self, /, *args: Any, **kwargs: Any) -> DispatchKeySet:
        """The keys a call with these arguments dispatches on; the highest one runs.

        Args:
            *args: the op's arguments.
            **kwargs: the op's keyword arguments.

        Returns:
            The computed key set.
        """
        _, mask, extract = self._state
        local = _local_get()
        return keyset_from_bits((extract(args, kwargs) | local.included) & local.kept & mask)

    def table_entry(self, key: DispatchKey | str) -> TableEntry:
        """The computed table entry for a runtime key: kernel, source and reason.

        Args:
            key: a runtime key or its name.

        Returns:
            The entry, with the reason the kernel was chosen.
        """
        return self._entry.dispatcher.table_entry(self, key)

    def __repr__(self) -> str:
        state = "" if self.has_schema else " (no schema)"
        return f"<OperatorHandle {self._entry.name}{state}>"


def select_kernel(
    handle: OperatorHandle, bits: int, state: CallState | None = None
) -> Callable[..., Any]:
    """The kernel that serves key bits ``bits`` in ``handle``'s table (or ``state``, read once).

    The one place outside a handle's own calls that picks a kernel: the
    non-fallthrough mask applies, the highest key's slot wins, and a boxed
    kernel comes bound to the handle and the key set it was chosen for.
    Generated call code and adapters (``customop.torch``) take kernels here.

    Args:
        handle: the operator.
        bits: the key bits of the call (after the local include/exclude sets).
        state: the handle's call state, when the caller already read it (its
            extractor computed ``bits``): then the table is the same one.

    Returns:
        A callable taking the op's arguments.
    """
    table, mask, _ = handle._state if state is None else state
    bits &= mask
    fn, boxed = table[bits.bit_length() - 1]
    return partial(fn, handle, keyset_from_bits(bits)) if boxed else fn


def is_live_kernel(handle: OperatorHandle, key: DispatchKey) -> Callable[[], bool]:
    """A test of whether the registration that serves ``key`` now is still registered.

    ``get_kernel`` hands out a kernel as it is now (torch's meaning); calling it
    once its registration was removed is an error, as torch's "invalidated".
    """
    record, _ = handle._entry.choose(key, handle._entry.dispatcher._fallbacks)
    if record is None:
        return lambda: False
    return lambda: record.alive


def missing_kernel(op: OperatorHandle, keyset: DispatchKeySet, /, *args: Any, **kwargs: Any) -> Any:
    """The table's entry for keys with no kernel: raises `MissingKernelError`.

    A call may read the table in the middle of a write that registers the
    kernel (a @custom_op redefinition defines the op, then registers its
    kernels, in one write): it waits for the registration lock, and
    redispatches if a kernel serves ``keyset`` by then.
    """
    entry = op._entry
    with entry.dispatcher._lock:
        table, mask, _ = op._state
        served = table[(keyset._bits & mask).bit_length() - 1][0] is not missing_kernel
    if served:
        return op.redispatch(keyset, *args, **kwargs)
    local = _local_get()
    call_keys = keyset_from_bits((entry.extract(args, kwargs) | local.included) & local.kept)
    raise missing_kernel_error(entry.dispatcher, op, keyset, call_keys)


def undefined_kernel(
    op: OperatorHandle, keyset: DispatchKeySet, /, *args: Any, **kwargs: Any
) -> Any:
    """Every entry of an operator without a schema: raises `UnknownOperatorError`.

    A call may read the table in the middle of a write that redefines the op
    (a @custom_op redefinition is one write): it waits for the registration
    lock, and calls again if the op is defined by then.
    """
    entry = op._entry
    with entry.dispatcher._lock:
        defined = entry.schema is not None
    if defined:
        return op(*args, **kwargs)
    raise no_schema_error(str(op.name), str(op.name))

"""Kernels and fake impls for existing ops: ``register_kernel`` and ``register_fake``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from customop.dispatch import Dispatcher, DispatchKey, OperatorHandle, RegistrationHandle
from customop.dispatch._global import dispatcher as default_dispatcher
from customop.exceptions import RegistrationError
from customop.library._fake_impl import remember_fake_impl
from customop.library._signature import check_signature
from customop.tensor._backends import BUILTIN_DEVICES

if TYPE_CHECKING:
    from customop.library._library import Library

__all__ = [
    "device_keys",
    "register_fake",
    "register_fake_on",
    "register_kernel",
    "register_kernel_on",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Device type names of the built-in backends (the tensor layer's table, one spelling);
#: renamed PrivateUse backends add theirs per dispatcher.
_DEVICE_KEYS = BUILTIN_DEVICES


def device_keys(
    dispatcher: Dispatcher, device_types: str | Sequence[str] | None, api: str
) -> list[DispatchKey]:
    """Dispatch keys for device type names; None means every device (CompositeExplicitAutograd)."""
    if device_types is None:
        return [DispatchKey.CompositeExplicitAutograd]
    names = [device_types] if isinstance(device_types, str) else list(device_types)
    keys = []
    for name in names:
        key = _DEVICE_KEYS.get(name)
        if key is None:
            try:
                key = dispatcher.parse_key(name, api=api)
            except ValueError:
                key = None
        if key is None or not key.is_backend:
            known = sorted({*_DEVICE_KEYS, *dispatcher._backends.devices})
            raise RegistrationError(
                f"{api}: device type {name!r} is unknown. A kernel is registered for a backend "
                f"device. Known device types: {', '.join(known)} (rename a PrivateUse backend "
                "to add one)."
            )
        keys.append(key)
    return keys


def _group(handles: list[RegistrationHandle]) -> RegistrationHandle:
    """One handle for several registrations (one kernel on several devices)."""

    def undo() -> None:
        for handle in reversed(handles):
            handle.remove()

    described = ", ".join(h.description for h in handles)
    return RegistrationHandle(undo, description=described, source=handles[0].source)


def _handle_of(op: object, dispatcher: Dispatcher, api: str) -> OperatorHandle:
    if isinstance(op, OperatorHandle):
        return op
    if isinstance(op, str):
        return dispatcher.find_schema_or_throw(op)
    # A CustomOpDef has .op (its OpOverload); an OpOverload has .handle.
    handle = getattr(getattr(op, "op", op), "handle", None)
    if isinstance(handle, OperatorHandle):
        return handle
    raise TypeError(
        f"{api}: expected an op (a CustomOpDef, an OpOverload or a name like 'ns::op'), "
        f"got {op!r}. Kernels attach to a defined operator. Pass the op or its name."
    )


def register_kernel_on(
    library: Library,
    op: OperatorHandle,
    device_types: str | Sequence[str],
    fn: Callable[..., Any],
) -> RegistrationHandle:
    """A kernel for ``op`` on each device type, owned by ``library``."""
    api = f"{op.name}.register_kernel"
    keys = device_keys(library.dispatcher, device_types, api)
    check_signature(fn, op.schema, api, "kernel")
    handles = [library.impl(str(op.name), fn, key) for key in keys]
    return handles[0] if len(handles) == 1 else _group(handles)


def register_fake_on(
    library: Library, op: OperatorHandle, fn: Callable[..., Any]
) -> RegistrationHandle:
    """The fake impl of ``op``, owned by ``library``, its signature checked now."""
    api = f"{op.name}.register_fake"
    check_signature(fn, op.schema, api, "fake impl")
    return library.impl(str(op.name), remember_fake_impl(fn, str(op.name)), DispatchKey.Fake)


def register_kernel(
    op: object,
    device_types: str | Sequence[str],
    fn: Callable[..., Any],
    *,
    dispatcher: Dispatcher | None = None,
) -> RegistrationHandle:
    """Register ``fn`` as ``op``'s kernel for ``device_types`` (ops from `Library` too).

    Args:
        op: the operator: a `CustomOpDef`, an `OpOverload`, or its name (``"ns::op"``).
        device_types: the device type(s) the kernel serves.
        fn: the kernel.
        dispatcher: where a name is looked up; default: ``customop.dispatcher``.

    Returns:
        The registration's handle.
    """
    if hasattr(op, "register_kernel") and hasattr(op, "_library"):
        # A @custom_op: its own library owns the kernel, so a redefinition removes it.
        return op.register_kernel(device_types, fn)  # type: ignore[no-any-return]
    d = default_dispatcher if dispatcher is None else dispatcher
    handle = _handle_of(op, d, "register_kernel")
    keys = device_keys(handle.dispatcher, device_types, "register_kernel")
    check_signature(fn, handle.schema, "register_kernel", "kernel")
    handles = [handle.dispatcher.register_impl(handle.name, key, fn) for key in keys]
    return handles[0] if len(handles) == 1 else _group(handles)


def register_fake(op: object, fn: F, *, dispatcher: Dispatcher | None = None) -> RegistrationHandle:
    """Register ``fn`` as ``op``'s fake impl (also for `Library` ops), checked now.

    Args:
        op: the operator: a `CustomOpDef`, an `OpOverload`, or its name (``"ns::op"``).
        fn: the fake impl.
        dispatcher: where a name is looked up; default: ``customop.dispatcher``.

    Returns:
        The registration's handle.

    Raises:
        RegistrationError: ``fn``'s signature does not fit the schema.

    Examples:
        >>> import customop
        >>> d = customop.Dispatcher()
        >>> _ = customop.tensor.install_backends(d)  # FakeTensor as an array type of d
        >>> lib = customop.Library("docfake", "DEF", dispatcher=d)
        >>> _ = lib.define("twice(Tensor x) -> Tensor")
        >>> _ = customop.register_fake(
        ...     "docfake::twice", lambda x: customop.empty_like(x), dispatcher=d
        ... )
        >>> with customop.FakeTensorMode():
        ...     print(d.find_op("docfake::twice")(customop.empty((2, 3))))
        FakeTensor(shape=(2, 3), dtype=float32, device=cpu)
    """
    if hasattr(op, "register_fake") and hasattr(op, "_library"):
        return op.register_fake(fn)  # type: ignore[no-any-return]  # see register_kernel
    d = default_dispatcher if dispatcher is None else dispatcher
    handle = _handle_of(op, d, "register_fake")
    check_signature(fn, handle.schema, "register_fake", "fake impl")
    fake = remember_fake_impl(fn, str(handle.name))
    return handle.dispatcher.register_impl(handle.name, DispatchKey.Fake, fake)

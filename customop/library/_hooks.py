"""Kernels and fake impls for existing ops: ``register_kernel`` and ``register_fake``.

Both work as torch's do: as a call or a decorator, returning the function
they register (its handle: `handle_of`), for ops from ``@custom_op``,
``Library.define`` or `define` alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, ParamSpec, TypeGuard, TypeVar, overload

from customop.dispatch import Dispatcher, DispatchKey, OperatorHandle, RegistrationHandle
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import RegistrationError, RegistrationValueError
from customop.library._registered import remember_handle
from customop.library._tagged import (
    fake_over_generated,
    is_generated_fake,
    refuse_fake_over_decomposition,
    remember_fake_impl,
)
from customop.ops import (
    OpOverload,
    canonical_dtypes,
    check_signature,
    operator_handle,
    prepare_kernel,
)
from customop.tensor import BUILTIN_DEVICES

if TYPE_CHECKING:
    from customop.library._custom_op import CustomOpDef
    from customop.library._library import Library
    from customop.schema import FunctionSchema

    #: What the other overloads take: ops with no Python signature (not a CustomOpDef,
    #: so that a fn that does not fit a CustomOpDef's signature is an error).
    UntypedOp = str | OpOverload | OperatorHandle

__all__ = [
    "check_device_input",
    "device_keys",
    "one_handle",
    "register_fake",
    "register_fake_on",
    "register_kernel",
    "register_kernel_on",
]

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")
R = TypeVar("R")

#: Device type names of the built-in backends (the tensor layer's table, one spelling);
#: renamed PrivateUse backends add theirs per dispatcher.
_DEVICE_KEYS = BUILTIN_DEVICES

#: torch's device type for "every device": a CompositeExplicitAutograd kernel.
DEFAULT_DEVICE: Final = "default"


def device_keys(
    dispatcher: Dispatcher, device_types: str | Sequence[str] | None, api: str
) -> list[DispatchKey]:
    """Dispatch keys for device type names.

    None and ``"default"`` mean every device (CompositeExplicitAutograd), as in torch.
    """
    if device_types is None:
        return [DispatchKey.CompositeExplicitAutograd]
    names = [device_types] if isinstance(device_types, str) else list(device_types)
    keys = []
    for name in names:
        if name == DEFAULT_DEVICE:
            keys.append(DispatchKey.CompositeExplicitAutograd)
            continue
        key = _DEVICE_KEYS.get(name)
        if key is None:
            try:
                key = dispatcher.parse_key(name, api=api)
            except ValueError:
                key = None
        kind, colon, index = name.partition(":")
        if (
            colon
            and index.isdigit()
            and (kind in _DEVICE_KEYS or kind in dispatcher._backends.devices)
        ):
            raise RegistrationError(
                f"{api}: device type {name!r} has a device index. A kernel serves every device "
                f"of its backend ({kind}:0, {kind}:1, ...), as in torch. Pass {kind!r}, without "
                "the index."
            )
        if key is None or not key.is_backend:
            known = sorted({*_DEVICE_KEYS, *dispatcher._backends.devices})
            raise RegistrationError(
                f"{api}: device type {name!r} is unknown. A kernel is registered for a backend "
                f"device. Known device types: {', '.join(known)} (rename a PrivateUse backend "
                "to add one)."
            )
        keys.append(key)
    return keys


def one_handle(handles: list[RegistrationHandle]) -> RegistrationHandle:
    """One handle for one or several registrations (one kernel on several devices)."""
    return handles[0] if len(handles) == 1 else RegistrationHandle.group(handles)


def check_device_input(schema: FunctionSchema, device_types: object, api: str) -> None:
    """A kernel per device needs a call that names its device: a tensor or ``Device``."""
    if device_types is None or device_types == "default" or schema.tensor_argument_positions:
        return
    if any(str(a.type).removesuffix("?") == "Device" for a in schema.arguments):
        return
    raise RegistrationValueError(
        f"{api}: {str(schema.name)!r} takes no tensor and no Device argument ({schema}), "
        f"so no call says which device's kernel to run (torch: Functions without tensor "
        "inputs are required to have a `device: torch.device` argument). Add a `device: "
        "torch.device` (Device) parameter, or register one kernel for every device "
        "(device_types=None)."
    )


def register_kernel_on(
    library: Library,
    op: OperatorHandle,
    device_types: str | Sequence[str] | None,
    fn: Callable[..., Any],
) -> RegistrationHandle:
    """A kernel for ``op`` on each device type, owned by ``library``."""
    api = f"{op.name}.register_kernel"
    check_device_input(op.schema, device_types, api)
    keys = device_keys(library.dispatcher, device_types, api)
    check_signature(fn, op.schema, api, "kernel")
    handles = [library.impl(str(op.name), fn, key) for key in keys]
    return one_handle(handles)


def register_fake_on(
    library: Library, op: OperatorHandle, fn: Callable[..., Any]
) -> RegistrationHandle:
    """The fake impl of ``op``, owned by ``library``, its signature checked now."""
    api = f"{op.name}.register_fake"
    check_signature(fn, op.schema, api, "fake impl")
    refuse_fake_over_decomposition(op, api)
    return library.impl(str(op.name), remember_fake_impl(fn, str(op.name)), DispatchKey.Fake)


def _is_custom_op(op: object) -> TypeGuard[CustomOpDef[Any, Any]]:
    # A @custom_op: its own library owns its kernels, so a redefinition removes them.
    from customop.library._custom_op import CustomOpDef  # noqa: PLC0415 -- import cycle

    return isinstance(op, CustomOpDef)


def _by_name(op: object, lib: Library | None, dispatcher: Dispatcher | None) -> object:
    """The live @custom_op definition a name or an `OpOverload` of it refers to (as torch
    resolves them: a redefinition removes what was registered through either), else ``op``."""
    if lib is not None:
        return op
    from customop.library._custom_op import live_definition  # noqa: PLC0415 -- import cycle

    if isinstance(op, OpOverload) and op.is_current:
        found = live_definition(op.dispatcher, str(op.name))
        return op if found is None or found.operator is not op.handle else found
    if not isinstance(op, str):
        return op
    found = live_definition(_dispatcher(None, dispatcher), op)
    return op if found is None else found


def _kernel_now(
    op: object,
    device_types: str | Sequence[str] | None,
    fn: F,
    lib: Library | None,
    dispatcher: Dispatcher | None,
) -> F:
    op = _by_name(op, lib, dispatcher)
    if _is_custom_op(op):
        return op.register_kernel(device_types, fn)  # type: ignore[return-value]
    api = "register_kernel"
    handle = operator_handle(op, _dispatcher(lib, dispatcher), api)
    keys = device_keys(handle.dispatcher, device_types, api)
    check_signature(fn, handle.schema, api, "kernel")
    if lib is not None:
        handles = [lib.impl(str(handle.name), fn, key) for key in keys]
    else:
        kernel = prepare_kernel(fn, handle.schema)
        handles = [handle.dispatcher.register_impl(handle.name, k, kernel) for k in keys]
    return remember_handle(fn, one_handle(handles))


def _fake_now(
    op: object, fn: F, lib: Library | None, dispatcher: Dispatcher | None, allow_override: bool
) -> F:
    api = "register_fake"
    op = _by_name(op, lib, dispatcher)
    if _is_custom_op(op) and allow_override:
        return op.register_fake(fn)  # type: ignore[return-value]
    handle = operator_handle(op, _dispatcher(lib, dispatcher), api)
    if not allow_override:
        _refuse_second_fake(handle, api)
    if _is_custom_op(op):
        return op.register_fake(fn)  # type: ignore[return-value]
    check_signature(fn, handle.schema, api, "fake impl")
    refuse_fake_over_decomposition(handle, api)
    if lib is not None:
        registered = lib.register_fake(str(handle.name), fn)
    else:
        fake = canonical_dtypes(remember_fake_impl(fn, str(handle.name)), handle.schema)
        with fake_over_generated(handle.dispatcher, str(handle.name)):
            registered = handle.dispatcher.register_impl(handle.name, DispatchKey.Fake, fake)
    return remember_handle(fn, registered)


def _refuse_second_fake(handle: OperatorHandle, api: str) -> None:
    """allow_override=False: a fake impl or a Meta kernel (torch derives one) is there."""
    for key, what in (
        (DispatchKey.Fake, "a fake impl"),
        (DispatchKey.Meta, "a Meta implementation"),
    ):
        entry = handle.table_entry(key)
        top = handle._entry.top(key)
        if entry.reason == "kernel" and top is not None and not is_generated_fake(top.fn):
            raise RegistrationError(
                f"{api}: {str(handle.name)!r} already has {what} ({entry.kernel} at "
                f"{entry.source}), and allow_override=False. Registering another would "
                "override it. Remove the first (customop.handle_of(fn).remove()), or leave "
                "allow_override at True to stack the new one over it."
            )


def _dispatcher(lib: Library | None, dispatcher: Dispatcher | None) -> Dispatcher:
    if lib is not None:
        return lib.dispatcher
    return default_dispatcher if dispatcher is None else dispatcher


# NOTE: the first @overload pair of each function types a `CustomOpDef` op:
# mypy holds `fn` to the op's signature, as the methods of CustomOpDef do. Other
# ops (names, OpOverloads of Library ops: `UntypedOp`) have no Python signature
# to hold it to.
@overload
def register_kernel(
    op: CustomOpDef[P, R],
    device_types: str | Sequence[str] | None,
    fn: None = None,
    /,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


@overload
def register_kernel(
    op: CustomOpDef[P, R],
    device_types: str | Sequence[str] | None,
    fn: Callable[P, R],
    /,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
) -> Callable[P, R]: ...


@overload
def register_kernel(
    op: UntypedOp,
    device_types: str | Sequence[str] | None,
    fn: None = None,
    /,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
) -> Callable[[F], F]: ...


@overload
def register_kernel(
    op: UntypedOp,
    device_types: str | Sequence[str] | None,
    fn: F,
    /,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
) -> F: ...


def register_kernel(
    op: object,
    device_types: str | Sequence[str] | None,
    fn: F | None = None,
    /,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
) -> Any:
    """Register ``fn`` as ``op``'s kernel for ``device_types``, as torch.library's does.

    NOTE: decorator-or-call, as in torch: without ``fn`` this returns a
    decorator. Either way the function itself is returned, unchanged;
    ``customop.handle_of(fn)`` is its registration's handle.

    Args:
        op: A `CustomOpDef`, an `OpOverload`, an `OperatorHandle` or a name
            (``"ns::op"``) of a defined op.
        device_types: ``"cpu"``, ``"cuda"``, a renamed backend, a sequence of
            them, or None / ``"default"`` for every device.
        fn: The kernel; its parameters are checked against the schema now.
        lib: A `Library` that owns the registration (removed when it closes).
        dispatcher: The dispatcher of a name (default: ``customop.dispatcher``).

    Returns:
        ``fn`` (or, without ``fn``, a decorator that registers and returns it).

    Raises:
        RegistrationError: Unknown device type, or ``fn`` does not fit the schema.
    """

    def register(kernel: F) -> F:
        return _kernel_now(op, device_types, kernel, lib, dispatcher)

    return register if fn is None else register(fn)


@overload
def register_fake(
    op: CustomOpDef[P, R],
    fn: None = None,
    /,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
    allow_override: bool = True,
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


@overload
def register_fake(
    op: CustomOpDef[P, R],
    fn: Callable[P, R],
    /,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
    allow_override: bool = True,
) -> Callable[P, R]: ...


@overload
def register_fake(
    op: UntypedOp,
    fn: None = None,
    /,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
    allow_override: bool = True,
) -> Callable[[F], F]: ...


@overload
def register_fake(
    op: UntypedOp,
    fn: F,
    /,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
    allow_override: bool = True,
) -> F: ...


def register_fake(
    op: object,
    fn: F | None = None,
    /,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
    allow_override: bool = True,
) -> Any:
    """Register ``fn`` as ``op``'s fake impl, as ``torch.library.register_fake``.

    A call or a decorator (see `register_kernel`), returning ``fn``; its handle
    is ``customop.handle_of(fn)``.

    Args:
        op: A `CustomOpDef`, an `OpOverload`, an `OperatorHandle` or a name of
            a defined op.
        fn: The fake impl; its parameters are checked against the schema now.
        lib: A `Library` that owns the registration (removed when it closes).
        dispatcher: The dispatcher of a name (default: ``customop.dispatcher``).
        allow_override: With False, refuse when the op already has a fake impl.

    Returns:
        ``fn`` (or, without ``fn``, a decorator that registers and returns it).

    Raises:
        RegistrationError: ``fn`` does not fit the schema, or a fake impl
            exists and ``allow_override`` is False.

    Examples:
        >>> import numpy as np
        >>> import customop
        >>> d = customop.Dispatcher()
        >>> _ = customop.tensor.install_backends(d)  # FakeTensor as an array type of d
        >>> lib = customop.Library("docfake", "DEF", dispatcher=d)
        >>> def pairs_cpu(x):
        ...     return np.stack([x, x], axis=1)
        >>> _ = lib.define("pairs(Tensor x) -> Tensor", kernels={"CPU": pairs_cpu})
        >>> @customop.register_fake("docfake::pairs", dispatcher=d)
        ... def pairs_fake(x):
        ...     return customop.new_empty(x, (x.shape[0], 2))
        >>> pairs = d.find_op("docfake::pairs")
        >>> with customop.FakeTensorMode() as mode:
        ...     print(pairs(mode.from_real(np.zeros(5))))
        FakeTensor(shape=(5, 2), dtype=float64, device=cpu)
        >>> customop.handle_of(pairs_fake).description  # the decorator returned the function
        'impl docfake::pairs Fake'
    """

    def register(fake: F) -> F:
        return _fake_now(op, fake, lib, dispatcher, allow_override)

    return register if fn is None else register(fn)

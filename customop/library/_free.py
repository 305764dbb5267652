"""torch.library's free functions: `define`, `impl`, `impl_abstract` and `get_kernel`.

Module-level torch code defines ops with ``torch.library.define("ns::op",
"(Tensor x) -> Tensor")`` and no library object in sight. customop registers
these straight in the dispatcher: the definition lives until its handle is
removed (or the ``lib=`` it was given closes), never with an unreferenced
`Library` that the garbage collector could close.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

from customop.dispatch import (
    Dispatcher,
    DispatchKey,
    DispatchKeySet,
    OperatorHandle,
    RegistrationHandle,
    is_live_kernel,
    select_kernel,
)
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import (
    DispatchKeyError,
    MissingKernelError,
    RegistrationError,
    RegistrationValueError,
)
from customop.library._hooks import (
    DEFAULT_DEVICE,
    device_keys,
    one_handle,
    register_fake,
)
from customop.library._library import Library
from customop.library._registered import remember_handle
from customop.library._spellings import TagsLike, read_tags
from customop.library._tagged import remember_fake_impl, tagged_kernels
from customop.ops import canonical_dtypes, check_signature, operator_handle, prepare_kernel
from customop.schema import FunctionSchema, parse_operator_name, parse_schema
from customop.tensor import BUILTIN_DEVICES

if TYPE_CHECKING:
    from customop.ops import OpOverload

__all__ = ["define", "get_kernel", "impl", "impl_abstract"]

F = TypeVar("F", bound=Callable[..., Any])


def _full_schema(qualname: str, schema: str | FunctionSchema, api: str) -> FunctionSchema:
    """``qualname`` plus a nameless schema: ``"ns::op"`` + ``"(Tensor x) -> Tensor"``."""
    name = parse_operator_name(qualname)
    if not name.namespace:
        raise RegistrationValueError(
            f"{api}: {qualname!r} has no namespace. Operators live in namespaces, so "
            "libraries stay apart. Write it as 'namespace::name', e.g. 'mylib::op'."
        )
    if isinstance(schema, FunctionSchema):
        parsed = schema
    else:
        text = schema.strip()
        parsed = parse_schema(qualname + text if text.startswith("(") else text)
    if parsed.name is not None and parsed.name != name:
        raise RegistrationValueError(
            f"{api}: the schema names {str(parsed.name)!r}, but the op is {qualname!r}. "
            "The op's name comes from the first argument (torch: expected schema to look "
            "like '(Tensor x) -> Tensor'). Write the schema without a name, as in "
            "'(Tensor x) -> Tensor'."
        )
    return parsed.model_copy(update={"name": name})


@overload
def define(
    qualname: str,
    schema: str | FunctionSchema,
    alias_analysis: str = "",
    *,
    lib: Library | None = None,
    tags: TagsLike = (),
    dispatcher: Dispatcher | None = None,
) -> RegistrationHandle: ...


@overload
def define(
    qualname: Library, schema: str | FunctionSchema, alias_analysis: str = ""
) -> Callable[[F], F]: ...


def define(
    qualname: str | Library,
    schema: str | FunctionSchema,
    alias_analysis: str = "",
    *,
    lib: Library | None = None,
    tags: TagsLike = (),
    dispatcher: Dispatcher | None = None,
) -> RegistrationHandle | Callable[[F], F]:
    """Define the operator ``qualname`` with ``schema``, as ``torch.library.define``.

    torch's older spelling, ``@define(lib, "name(Tensor x) -> Tensor")``, defines
    the op in ``lib`` and registers the decorated function as its kernel for the
    library's key (else CompositeImplicitAutograd), returning the function.

    Args:
        qualname: ``"namespace::name"`` (or ``"namespace::name.overload"``), or a
            `Library` (the older spelling).
        schema: The schema without the name, e.g. ``"(Tensor x) -> Tensor"`` (with
            the name in the older spelling).
        alias_analysis: As for `Library.define` (``""`` or ``"FROM_SCHEMA"``).
        lib: A `Library` that owns the definition; without it the definition
            lives until the returned handle is removed.
        tags: A tag or a sequence of tags (str, or ``torch.Tag``).
        dispatcher: Where to define it (default: ``customop.dispatcher``).

    Returns:
        The definition's handle.

    Raises:
        RegistrationError: The name is taken or malformed.
        SchemaParseError: ``schema`` does not parse.
    """
    api = "define"
    if isinstance(qualname, Library):
        return _legacy_define(qualname, schema, alias_analysis)
    parsed = _full_schema(qualname, schema, api)
    if lib is not None:
        return lib.define(parsed, alias_analysis, tags=tags)
    target = default_dispatcher if dispatcher is None else dispatcher
    names = read_tags(tags)
    return target.register_def(parsed, tags=names, kernels=tagged_kernels(parsed, names, None, api))


def _legacy_define(
    lib: Library, schema: str | FunctionSchema, alias_analysis: str
) -> Callable[[F], F]:
    """``@define(lib, schema)``: the def, then the decorated function as its kernel."""

    def register(fn: F) -> F:
        lib.define(schema, alias_analysis)
        parsed = parse_schema(schema) if isinstance(schema, str) else schema
        name = parsed.name
        assert name is not None  # Library.define refused a nameless schema
        remember_handle(
            fn, lib.impl(f"{name.name}.{name.overload}" if name.overload else name.name, fn)
        )
        return fn

    return register


def _impl_keys(dispatcher: Dispatcher, types: str | Sequence[str], api: str) -> list[DispatchKey]:
    """Keys for torch's ``types``: device types (``"cpu"``, ``"default"``) or key names."""
    names = [types] if isinstance(types, str) else list(types)
    keys: list[DispatchKey] = []
    for name in names:
        if (
            name == DEFAULT_DEVICE
            or name in BUILTIN_DEVICES
            or name in dispatcher._backends.devices
        ):
            keys.extend(device_keys(dispatcher, name, api))
        else:
            try:
                keys.append(dispatcher.parse_key(name, api=api))
            except DispatchKeyError as error:
                devices = ", ".join([*BUILTIN_DEVICES, DEFAULT_DEVICE])
                raise RegistrationValueError(
                    f"{error} (torch: Expected one of {devices}, or a dispatch key)"
                ) from None
    return keys


def _impl_now(
    qualname: str, keys: list[DispatchKey], fn: F, dispatcher: Dispatcher
) -> RegistrationHandle:
    api = "impl"
    name = parse_operator_name(qualname)
    found = dispatcher.find_op(qualname)
    kernel: Callable[..., Any] = fn
    fake: Callable[..., Any] = fn
    if found is not None and found.has_schema:
        what = "fake impl" if keys == [DispatchKey.Fake] else "kernel"
        check_signature(fn, found.schema, api, what)
        kernel = prepare_kernel(fn, found.schema)
        if DispatchKey.Fake in keys:
            fake = canonical_dtypes(remember_fake_impl(fn, qualname), found.schema)
    handles = [
        dispatcher.register_impl(name, key, fake if key is DispatchKey.Fake else kernel)
        for key in keys
    ]
    return one_handle(handles)


@overload
def impl(
    qualname: str,
    types: str | Sequence[str],
    fn: None = None,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
) -> Callable[[F], F]: ...


@overload
def impl(
    qualname: str,
    types: str | Sequence[str],
    fn: F,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
) -> F: ...


@overload
def impl(qualname: Library, types: str, fn: str = "") -> Callable[[F], F]: ...


def impl(
    qualname: str | Library,
    types: str | Sequence[str],
    fn: Any = None,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
) -> Any:
    """Register ``fn`` for ``types`` of op ``qualname``, as ``torch.library.impl``.

    NOTE: decorator-or-call, returning ``fn`` either way (its handle:
    ``customop.handle_of(fn)``). torch's older spelling
    ``impl(lib, "name", "CPU")`` (a `Library` first) is a decorator that
    registers with ``lib.impl``.

    Args:
        qualname: ``"namespace::name"`` of the op (or, in the older spelling, a `Library`).
        types: Device types (``"cpu"``, ``"cuda"``, ``"default"`` for every
            device) or dispatch key names (``"CompositeImplicitAutograd"``).
        fn: The kernel; checked against the schema when the op is defined.
        lib: A `Library` that owns the registration (removed when it closes).
        dispatcher: Where the op lives (default: ``customop.dispatcher``).

    Returns:
        ``fn`` (or, without ``fn``, a decorator that registers and returns it).
    """
    if isinstance(qualname, Library):
        return _library_impl(qualname, str(types), fn or "")
    api = "impl"
    target = lib.dispatcher if lib is not None else dispatcher or default_dispatcher
    keys = _impl_keys(target, types, api)

    def register(kernel: F) -> F:
        if lib is not None:
            handles = [
                lib.register_fake(qualname, kernel)
                if key is DispatchKey.Fake
                else lib.impl(qualname, kernel, key)
                for key in keys
            ]
            handle = one_handle(handles)
        else:
            handle = _impl_now(qualname, keys, kernel, target)
        return remember_handle(kernel, handle)

    return register if fn is None else register(fn)


def _library_impl(lib: Library, name: str, dispatch_key: str) -> Callable[[F], F]:
    def register(fn: F) -> F:
        return remember_handle(fn, lib.impl(name, fn, dispatch_key))

    return register


def impl_abstract(
    qualname: str, func: Callable[..., Any] | None = None, *, lib: Library | None = None
) -> Any:
    """Deprecated alias of `register_fake` (torch deprecated it for ``register_fake`` too).

    Args:
        qualname: The op's name, ``"namespace::name"``.
        func: The fake impl (a decorator without it).
        lib: A `Library` that owns the registration.

    Returns:
        What `register_fake` returns: ``func``, or a decorator.
    """
    warnings.warn(
        "impl_abstract is deprecated: it was renamed register_fake. Both register a fake "
        "impl. Call customop.register_fake instead.",
        DeprecationWarning,
        stacklevel=2,
    )
    return register_fake(qualname, func, lib=lib)


def get_kernel(
    op: str | OpOverload | OperatorHandle | object,
    dispatch_key: DispatchKey | str,
    *,
    dispatcher: Dispatcher | None = None,
) -> Callable[..., Any]:
    """A callable that runs ``op``'s kernel for ``dispatch_key``, as ``torch.library.get_kernel``.

    The callable takes the op's arguments and runs the dispatch table's
    entry for that runtime key (a direct kernel, a composite one, a fallback),
    skipping key extraction, as ``op.redispatch`` does.

    Args:
        op: A `CustomOpDef`, an `OpOverload`, an `OperatorHandle` or a name.
        dispatch_key: A runtime key (``"CPU"``, ``DispatchKey.Fake``, ...).
        dispatcher: The dispatcher of a name (default: ``customop.dispatcher``).

    Returns:
        The kernel, as a function of the op's arguments.

    Raises:
        MissingKernelError: The table has no kernel for that key.
        DispatchKeyError: The key is unknown or an alias key.
    """
    api = "get_kernel"
    handle = operator_handle(op, default_dispatcher if dispatcher is None else dispatcher, api)
    key = handle.dispatcher.parse_key(dispatch_key, api=api, runtime=True)
    entry = handle.table_entry(key)
    if entry.reason in ("missing", "fallthrough"):
        raise MissingKernelError(
            f"{api}: {str(handle.name)!r} has no kernel for dispatch key {entry.key!r} "
            f"(the table says {entry.reason!r}; torch: no kernel for {entry.key} for "
            f"{handle.name}). Only a key with a kernel can give one. "
            f"Register one, or pick a key from dispatcher.dump_table({str(handle.name)!r})."
        )
    # The kernel as it is now, as torch's get_kernel: a kernel registered later that
    # calls this one must not reach itself through the table.
    fn = select_kernel(handle, DispatchKeySet(key).bits)
    live = is_live_kernel(handle, key)
    name = str(handle.name)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        if not live():
            raise RegistrationError(
                f"{api}: the {entry.key} kernel of {name!r} from {entry.source} has been "
                "invalidated: its registration was removed (torch: 'has been invalidated'). "
                "It no longer belongs to the op. Call get_kernel again for the current one."
            )
        return fn(*args, **kwargs)

    kernel.__name__ = kernel.__qualname__ = entry.kernel or f"{handle.name}.{entry.key}"
    kernel.__doc__ = f"{handle.name}'s {entry.key} kernel ({entry.reason}, from {entry.source})."
    return kernel

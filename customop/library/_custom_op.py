"""``@custom_op``: a typed Python function becomes a dispatched operator.

The decorator validates its options (a pydantic model) and infers the schema
before it registers anything, then defines the op in a FRAGMENT library of
its own and registers the body as its kernel. The returned `CustomOpDef` is
generic over the function's ``ParamSpec``, so mypy checks calls exactly as it
would check the undecorated function.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, ParamSpec, TypeVar, overload

from customop.dispatch import Dispatcher, DispatchKey, OperatorHandle, RegistrationHandle
from customop.dispatch._global import dispatcher as default_dispatcher
from customop.dispatch._kernel import caller_source
from customop.exceptions import RegistrationError, SchemaError
from customop.library._checks import attach_value_checks
from customop.library._choices import choice_checks, enum_kernel
from customop.library._hooks import device_keys, register_fake_on, register_kernel_on
from customop.library._library import Library
from customop.library._options import CustomOpOptions, check_mutates_against, make_options
from customop.library._overload import OpOverload, bind_overload
from customop.schema import (
    Choices,
    FunctionSchema,
    MutatesArgs,
    infer_schema_details,
    parse_operator_name,
    parse_schema,
)

__all__ = ["CustomOpDef", "CustomOpOptions", "custom_op"]

P = ParamSpec("P")
R = TypeVar("R")


class CustomOpDef(Generic[P, R]):
    """An operator made by ``@custom_op``: call it like the function it was made from.

    ``register_kernel`` and ``register_fake`` add kernels; ``schema`` and ``op``
    (the `OpOverload`) describe it. Redefining the same name replaces this
    definition; calling a replaced one raises, naming the new definition.
    """

    def __init__(
        self,
        options: CustomOpOptions,
        fn: Callable[P, R],
        schema: FunctionSchema,
        library: Library,
        *,
        handle: OperatorHandle,
        source: str,
    ) -> None:
        self.options = options
        self._fn = fn
        self._schema = schema
        self._library = library
        self._handle = handle
        self._op: OpOverload | None = None
        self._replaced_by: str | None = None
        self.source = source
        self.__doc__ = fn.__doc__
        self.__name__ = getattr(fn, "__name__", options.name)
        self.__wrapped__ = fn

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        # NOTE: call code is built on the first call, not at registration: it
        # costs more than the registration itself, and many ops of a library
        # are never called in a given process. `_specialize` moves this object
        # to a class of its own whose __call__ is the op's generated code (a
        # staticmethod), so later calls cost what op.op(x) does.
        return self._specialize()(*args, **kwargs)  # type: ignore[no-any-return]

    def _specialize(self) -> Callable[..., Any]:
        overload = self.op
        if overload._site is None:  # no generated code: the OpOverload's generic path
            return overload
        with _bind_lock:
            if type(self) is CustomOpDef:
                namespace = {"__call__": vars(type(overload))["__call__"]}  # the staticmethod
                self.__class__ = type(f"CustomOpDef[{self.name}]", (_Specialized,), namespace)
        return self.__call__

    @property
    def name(self) -> str:
        return self.options.name

    @property
    def schema(self) -> FunctionSchema:
        return self._schema

    @property
    def op(self) -> OpOverload:
        """The `OpOverload` (also ``customop.ops.<ns>.<name>.default``)."""
        overload = self._op
        if overload is None:
            self._guard()  # a replaced definition never binds the new one's schema
            with _bind_lock:
                overload = self._op
                if overload is None:
                    overload = bind_overload(self._handle, self.name, schema=self._schema)
                    if overload._site is not None:
                        overload._site.guard = self._guard
                    self._op = overload
        return overload

    @property
    def dispatcher(self) -> Dispatcher:
        return self._library.dispatcher

    def _guard(self) -> None:
        if self._replaced_by is not None:
            raise RegistrationError(
                f"{self.name}: this @custom_op definition (from {self.source}) was replaced by "
                f"a newer one at {self._replaced_by}. Calling the old object would run "
                "kernels it no longer owns. Use the object the new definition returned."
            )
        if self._library.closed:
            raise RegistrationError(
                f"{self.name}: this @custom_op definition (from {self.source}) was removed. "
                "Its library is closed. Define the op again."
            )

    @overload
    def register_kernel(
        self, device_types: str | Sequence[str], fn: None = None
    ) -> Callable[[Callable[P, R]], RegistrationHandle]: ...

    @overload
    def register_kernel(
        self, device_types: str | Sequence[str], fn: Callable[P, R]
    ) -> RegistrationHandle: ...

    def register_kernel(
        self, device_types: str | Sequence[str], fn: Callable[P, R] | None = None
    ) -> RegistrationHandle | Callable[[Callable[P, R]], RegistrationHandle]:
        """Register ``fn`` as the kernel for ``device_types`` (a decorator without ``fn``)."""
        # NOTE: decorator-or-call. Without fn this returns a decorator that
        # registers the function it decorates; with fn it registers at once.
        # The decorator returns the handle, so the decorated name holds the
        # registration (remove it with handle.remove()).
        self._guard()

        def register(kernel: Callable[P, R]) -> RegistrationHandle:
            return register_kernel_on(self._library, self._handle, device_types, kernel)

        return register if fn is None else register(fn)

    @overload
    def register_fake(self, fn: None = None) -> Callable[[Callable[P, R]], RegistrationHandle]: ...

    @overload
    def register_fake(self, fn: Callable[P, R]) -> RegistrationHandle: ...

    def register_fake(
        self, fn: Callable[P, R] | None = None
    ) -> RegistrationHandle | Callable[[Callable[P, R]], RegistrationHandle]:
        """Register the fake (shape-only) impl, checked against the schema now."""
        self._guard()

        def register(fake: Callable[P, R]) -> RegistrationHandle:
            return register_fake_on(self._library, self._handle, fake)

        return register if fn is None else register(fn)

    def __repr__(self) -> str:
        state = " (replaced)" if self._replaced_by else ""
        return f"<CustomOpDef {self._schema}{state}>"


class _Specialized(CustomOpDef[Any, Any]):
    """The base of the per-op classes `CustomOpDef._specialize` makes."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Not Generic's bookkeeping (a tenth of an op's first call): a per-op
        # class adds only its __call__, and is never subscripted.
        pass


# (dispatcher id, name) -> the live definition, so a redefinition can replace it.
_live: dict[tuple[int, str], CustomOpDef[Any, Any]] = {}
_live_lock = threading.Lock()
# Guards the one-time binding of a definition's OpOverload and call code.
_bind_lock = threading.Lock()


def _detaching(detach: Callable[[], None]) -> RegistrationHandle:
    # Closed with the op's library (a redefinition closes it): the checks go too.
    return RegistrationHandle(detach, description="value checks", source="")


def _explicit_schema(options: CustomOpOptions, text: str) -> FunctionSchema:
    """``schema=`` text: ``(args) -> returns``, or the same with the op's own name."""
    text = text.strip()
    if text.startswith("("):
        return parse_schema(options.name + text)
    schema = parse_schema(text)
    if schema.name != parse_operator_name(options.name):
        raise ValueError(
            f"custom_op: {options.name!r}: schema={text!r} names the operator "
            f"{str(schema.name)!r}. The op's name comes from the first argument. Write the "
            "schema without a name, as in '(Tensor x) -> Tensor'."
        )
    return schema


def _schema_of(
    options: CustomOpOptions, fn: Callable[..., Any]
) -> tuple[FunctionSchema, dict[str, Choices]]:
    if options.schema_text is not None:
        schema = _explicit_schema(options, options.schema_text)
        check_mutates_against(schema, options)
        return schema, {}
    try:
        details = infer_schema_details(fn, mutates_args=options.mutates_args, op_name=options.name)
    except SchemaError as error:  # name the op being defined, not only the function
        raise SchemaError(f"custom_op {options.name!r}: {error}") from None
    return details.schema, dict(details.choices)


def _define(
    options: CustomOpOptions, fn: Callable[P, R], dispatcher: Dispatcher
) -> CustomOpDef[P, R]:
    schema, choices = _schema_of(options, fn)
    keys = device_keys(dispatcher, options.device_types, "custom_op")
    source = caller_source()
    key = (id(dispatcher), options.name)
    with _live_lock:
        old = _live.get(key)
        existing = dispatcher.find_op(options.name)
        if existing is not None and (old is None or old._library.closed):
            raise RegistrationError(
                f"custom_op: {options.name!r} is already defined, not by @custom_op. Two "
                "definitions of one name would fight over its kernels. Pick another name, "
                "or remove the other definition first."
            )
        if old is not None:
            old._replaced_by = source
            old._library.close()
        library = Library(schema.namespace, "FRAGMENT", dispatcher=dispatcher, source=source)
        body = enum_kernel(fn, schema, choices)
        try:
            kernels: dict[DispatchKey | str, Callable[..., Any]] = {key: body for key in keys}
            library.define(schema, tags=options.tags, source=source, kernels=kernels)
        except BaseException:
            library.close()
            raise
        handle = dispatcher.find_schema_or_throw(options.name)
        fn_name = getattr(fn, "__name__", "op")
        handle._entry.kernel_hint = f"{fn_name}.register_kernel('{{device}}', fn)"
        checks = choice_checks(schema, choices)
        if checks:
            library._adopt(_detaching(attach_value_checks(schema, checks)))
        definition = CustomOpDef(options, fn, schema, library, handle=handle, source=source)
        _live[key] = definition
    return definition


@overload
def custom_op(
    name: str,
    fn: Callable[P, R],
    /,
    *,
    mutates_args: Sequence[str] | MutatesArgs,
    device_types: str | Sequence[str] | None = None,
    schema: str | None = None,
    tags: Sequence[str] = (),
    dispatcher: Dispatcher | None = None,
) -> CustomOpDef[P, R]: ...


@overload
def custom_op(
    name: str,
    fn: None = None,
    /,
    *,
    mutates_args: Sequence[str] | MutatesArgs,
    device_types: str | Sequence[str] | None = None,
    schema: str | None = None,
    tags: Sequence[str] = (),
    dispatcher: Dispatcher | None = None,
) -> Callable[[Callable[P, R]], CustomOpDef[P, R]]: ...


def custom_op(
    name: str,
    fn: Callable[P, R] | None = None,
    /,
    *,
    mutates_args: Sequence[str] | MutatesArgs,
    device_types: str | Sequence[str] | None = None,
    schema: str | None = None,
    tags: Sequence[str] = (),
    dispatcher: Dispatcher | None = None,
) -> CustomOpDef[P, R] | Callable[[Callable[P, R]], CustomOpDef[P, R]]:
    """Make ``fn`` an operator ``name`` (``"ns::op"``), as ``torch.library.custom_op`` does.

    ``mutates_args`` names the tensor parameters ``fn`` writes to (or is
    `MutatesArgs.UNKNOWN`); ``device_types`` (``"cpu"``, ``"cuda"``, ...)
    limits the body to those devices, else it serves all of them
    (CompositeExplicitAutograd); ``schema`` overrides inference.
    """
    # NOTE: decorator-or-call, as in torch: `custom_op(name, fn, ...)` defines
    # now; `@custom_op(name, ...)` returns the decorator. The @overload pair
    # above gives mypy the right type for each form.
    options = make_options(
        name=name,
        mutates_args=mutates_args,
        device_types=device_types,
        schema_text=schema,
        tags=tuple(tags),
    )
    target = default_dispatcher if dispatcher is None else dispatcher

    def define(body: Callable[P, R]) -> CustomOpDef[P, R]:
        return _define(options, body, target)

    return define if fn is None else define(fn)

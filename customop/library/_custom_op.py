"""``@custom_op``: a typed Python function becomes a dispatched operator.

The decorator validates its options (a pydantic model) and infers the schema
before it registers anything, then defines the op in a FRAGMENT library of
its own and registers the body as its kernel. The returned `CustomOpDef` is
generic over the function's ``ParamSpec``, so mypy checks calls exactly as it
would check the undecorated function.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, overload

from customop.autograd import register_autograd as register_formula
from customop.dask import register_blockwise as register_rule
from customop.dispatch import (
    Dispatcher,
    DispatchKey,
    OperatorHandle,
    RegistrationHandle,
    RegistryLock,
    caller_source,
    register_dispatch_mode,
)
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import RegistrationError, SchemaError
from customop.library._enabled import kernel_enabled
from customop.library._hooks import (
    check_device_input,
    device_keys,
    register_fake_on,
    register_kernel_on,
)
from customop.library._library import Library
from customop.library._registered import remember_handle
from customop.library._spellings import TagsLike, read_tags
from customop.library._tagged import checked_returns, trivial_fake
from customop.ops import (
    DEFINITION,
    OpDefinition,
    OpOverload,
    attach_value_checks,
    bind_overload,
    choice_checks,
    enum_kernel,
    forget,
    refuse_under_dynamo,
    swap_class,
)
from customop.schema import (
    FunctionSchema,
    MutatesArgs,
    parse_operator_name,
    parse_schema,
)
from customop.vmap import TypedRule
from customop.vmap import register_rule as register_batching_rule

if TYPE_CHECKING:
    from customop.library._options import CustomOpOptions
    from customop.schema import Choices

__all__ = ["CustomOpDef", "custom_op", "live_definition"]

P = ParamSpec("P")
R = TypeVar("R")
Outputs = TypeVar("Outputs", bound=tuple[Any, ...])  # an op with several outputs


class CustomOpDef(OpDefinition, Generic[P, R]):
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
        # The name, not the options model: a kept model is three more objects per op
        # (itself, its __dict__, its field set) for every full gc collection to visit.
        self._name = options.name
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

    def __call__(self, /, *args: P.args, **kwargs: P.kwargs) -> R:
        # NOTE: call code is built on the first call, not at registration: it
        # costs more than the registration itself, and many ops of a library
        # are never called in a given process. `_specialize` moves this object
        # to a class of its own whose __call__ is the op's generated code (a
        # staticmethod), so later calls cost what op.op(x) does.
        refuse_under_dynamo(self._name)  # torch.compile of an op not registered in torch
        return self._specialize()(*args, **kwargs)  # type: ignore[no-any-return]

    def _specialize(self) -> Callable[..., Any]:
        overload = self.op
        site = overload._site
        if site is None:  # no generated code: the OpOverload's generic path
            return overload
        name = f"CustomOpDef[{self.name}]"
        swap_class(self, site.function, name=name, base=_Specialized, only_from=CustomOpDef)
        return self.__call__

    # -- OpDefinition: what registration functions and adapters ask of a definition --

    @property
    def operator(self) -> OperatorHandle:
        """The dispatcher's handle of the op (``op.op.handle``, without binding the op)."""
        return self._handle

    @property
    def replaced(self) -> bool:
        """Whether a newer definition of the name, or a removal, retired this one."""
        return self._replaced_by is not None or self._library.closed

    def call_objects(self) -> tuple[Any, ...]:
        """This object and its bound `OpOverload` (once bound): what calls the op.

        Returns:
            The objects, this one first.
        """
        return (self,) if self._op is None else (self, self._op)

    def bound_overload(self) -> OpOverload:
        """The `OpOverload` this definition calls (`op`).

        Returns:
            The overload, bound on first use.
        """
        return self.op

    def extra_removed(self, record: object) -> None:
        """Its `DEFINITION` extra left the op (its library closed): free the call code.

        Args:
            record: the extra's record that was removed.
        """
        retire(self)

    def adopt(self, registration: RegistrationHandle) -> RegistrationHandle:
        """Own ``registration``: it is removed with this definition (or a redefinition).

        Args:
            registration: the handle of a registration made for this op.

        Returns:
            ``registration`` itself.
        """
        self._library._adopt(registration)
        return registration

    @property
    def name(self) -> str:
        """The operator's qualified name, ``"ns::name"``."""
        return self._name

    @property
    def schema(self) -> FunctionSchema:
        """The op's schema, inferred from the function's type hints or given as ``schema=``."""
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
        """The dispatcher the op is registered on (``customop.dispatcher`` unless given)."""
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
        self, device_types: str | Sequence[str] | None, fn: None = None
    ) -> Callable[[Callable[P, R]], Callable[P, R]]: ...

    @overload
    def register_kernel(
        self, device_types: str | Sequence[str] | None, fn: Callable[P, R]
    ) -> Callable[P, R]: ...

    def register_kernel(
        self, device_types: str | Sequence[str] | None, fn: Callable[P, R] | None = None
    ) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
        """Register ``fn`` as the kernel for ``device_types`` (a decorator without ``fn``).

        Returns ``fn``, as torch does; ``customop.handle_of(fn)`` is the handle.

        Args:
            device_types: ``"cpu"``, ``"cuda"``, a renamed backend's device type, a
                sequence of them, or None / ``"default"`` for every device
                (a CompositeExplicitAutograd kernel).
            fn: the kernel; its parameters are checked against the op's schema now.

        Returns:
            ``fn`` itself (or, without ``fn``, a decorator that registers the
            function it decorates and returns it). The kernel is removed when the
            op is redefined, or by ``customop.handle_of(fn).remove()``.

        Raises:
            RegistrationError: a device type is unknown, or ``fn`` does not fit the schema.
        """
        # NOTE: decorator-or-call. Without fn this returns a decorator that
        # registers the function it decorates; with fn it registers at once.
        # Both return the function (torch's behaviour), so a decorated name
        # stays callable; the registration's handle is customop.handle_of(fn).
        self._guard()

        def register(kernel: Callable[P, R]) -> Callable[P, R]:
            checked = checked_returns(kernel, self._schema, self._handle.tags)
            handle = register_kernel_on(self._library, self._handle, device_types, checked)
            return remember_handle(kernel, handle)

        return register if fn is None else register(fn)

    @overload
    def register_fake(self, fn: None = None) -> Callable[[Callable[P, R]], Callable[P, R]]: ...

    @overload
    def register_fake(self, fn: Callable[P, R]) -> Callable[P, R]: ...

    def register_fake(
        self, fn: Callable[P, R] | None = None
    ) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
        """Register the fake (shape-only) impl, checked against the schema now.

        Returns ``fn``, as torch does; ``customop.handle_of(fn)`` is the handle.

        Args:
            fn: the fake impl: takes the op's arguments (FakeTensors for tensors)
                and returns outputs with the kernel's shapes, dtypes and devices
                (e.g. from `customop.empty_like`).

        Returns:
            ``fn`` itself (or, without ``fn``, a decorator that registers the
            function it decorates and returns it).

        Raises:
            RegistrationError: ``fn`` does not fit the schema, or the op has a
                CompositeImplicitAutograd kernel, which would run on fakes instead.
        """
        self._guard()

        def register(fake: Callable[P, R]) -> Callable[P, R]:
            return remember_handle(fake, register_fake_on(self._library, self._handle, fake))

        return register if fn is None else register(fn)

    def register_blockwise(
        self, spec: str, *, combine: Callable[[Any, Any], Any] | None = None
    ) -> RegistrationHandle:
        """Declare how chunks line up (``"ij,jk->ik"``); see `customop.register_blockwise`.

        Args:
            spec: the rule in index notation, one comma-separated term per tensor
                argument, then ``->`` and the result's; an uppercase letter is a
                dimension that must stay in one chunk.
            combine: merges two partial results of a contracted dimension (one
                that appears in the arguments but not the result); default: sum.

        Returns:
            The rule's handle; its ``remove()`` drops the rule, as does redefining the op.

        Raises:
            RegistrationError: the spec is malformed, does not match the op's
                tensor arguments, or the op already has a rule.
        """
        self._guard()
        return register_rule(self, spec, combine=combine)

    # NOTE: typed by the op's outputs. One output: mypy checks `backward(ctx, grad)`
    # against it, and `setup_context`'s `output`. A tuple of outputs (the first
    # overload): `backward(ctx, *grads)` is checked at registration only.
    @overload
    def register_autograd(
        self: CustomOpDef[P, Outputs],
        backward: Callable[..., object],
        /,
        *,
        setup_context: Callable[[Any, tuple[Any, ...], Outputs], object] | None = None,
    ) -> RegistrationHandle: ...

    @overload
    def register_autograd(
        self,
        backward: Callable[[Any, R], object],
        /,
        *,
        setup_context: Callable[[Any, tuple[Any, ...], R], object] | None = None,
    ) -> RegistrationHandle: ...

    def register_autograd(
        self,
        backward: Callable[..., object],
        /,
        *,
        setup_context: Callable[..., object] | None = None,
    ) -> RegistrationHandle:
        """Register the op's autograd formula (torch's ``register_autograd``).

        Args:
            backward: ``backward(ctx, *grads)``: one gradient per output in, one
                per input out.
            setup_context: ``setup_context(ctx, inputs, output)``, run after the forward.

        Returns:
            The handle; removing it removes the formula.
        """
        self._guard()
        return register_formula(self, backward, setup_context=setup_context)

    def set_kernel_enabled(
        self, device_type: str, enabled: bool = True
    ) -> AbstractContextManager[None]:
        """Within the block, turn ``device_type``'s registered kernel off (or back on).

        torch's ``CustomOpDef.set_kernel_enabled``: while disabled, calls on that
        device run this op's own function; a log line (logger ``customop.library``)
        says when there is nothing to change.

        Args:
            device_type: ``"cpu"``, ``"cuda"``, ...
            enabled: False to disable the kernel, True to enable it again.

        Returns:
            A context manager.
        """
        self._guard()
        return kernel_enabled(self, device_type, enabled)

    @overload
    def register_vmap(self, fn: None = None) -> Callable[[TypedRule[P]], TypedRule[P]]: ...

    @overload
    def register_vmap(self, fn: TypedRule[P]) -> TypedRule[P]: ...

    def register_vmap(
        self, fn: TypedRule[P] | None = None
    ) -> TypedRule[P] | Callable[[TypedRule[P]], TypedRule[P]]:
        """Register the op's batching rule (torch's ``register_vmap``); see `register_vmap`.

        Returns ``fn``, as torch does; ``customop.handle_of(fn)`` is the handle.

        Args:
            fn: ``fn(info, in_dims, *args, **kwargs) -> (outputs, out_dims)``; its
                parameters are checked against the op's schema now.

        Returns:
            ``fn`` itself (or, without ``fn``, a decorator that registers the
            function it decorates and returns it). Redefining the op removes it.

        Raises:
            RegistrationError: ``fn`` cannot take the op's arguments, or the op
                already has a rule.
        """
        self._guard()
        source = caller_source()

        def register(rule: TypedRule[P]) -> TypedRule[P]:
            return register_batching_rule(self, rule, None, source)  # type: ignore[no-any-return]

        return register if fn is None else register(fn)

    def register_dispatch_mode(self, mode: type, fn: Callable[..., Any]) -> RegistrationHandle:
        """Run ``fn(mode, op, types, args, kwargs)`` for this op while a ``mode`` is active.

        Instead of the mode's ``__dispatch__``; torch's ``register_torch_dispatch``.

        Args:
            mode: a `DispatchMode` subclass (the rule applies to its subclasses too).
            fn: the rule, called as ``fn(mode, op, types, args, kwargs)``.

        Returns:
            The handle that removes the rule.
        """
        self._guard()
        return register_dispatch_mode(self._handle, mode, fn)

    def remove(self) -> None:
        """Remove the op: its def, every kernel registered through this object,
        and the call code made for it (idempotent). The name may then be defined
        again; calling this object afterwards raises `RegistrationError`."""
        remove_definition(self)

    @property
    def registration(self) -> RegistrationHandle:
        """A `RegistrationHandle` whose ``remove()`` is `remove` (``with op.registration:``)."""
        return RegistrationHandle(
            self.remove, description=f"custom_op {self.name}", source=self.source
        )

    @property
    def handle(self) -> RegistrationHandle:
        """Deprecated spelling of `registration` (``handle`` means an `OperatorHandle`
        elsewhere, as in ``op.op.handle``)."""
        warnings.warn(
            f"{self.name}: CustomOpDef.handle is deprecated; use .registration (the same "
            "RegistrationHandle). On OpOverload, .handle is the OperatorHandle.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.registration

    def __repr__(self) -> str:
        state = " (replaced)" if self._replaced_by else ""
        return f"<CustomOpDef {self._schema}{state}>"


class _Specialized(CustomOpDef[Any, Any]):
    """The base of the per-op classes `CustomOpDef._specialize` makes."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Not Generic's bookkeeping (a tenth of an op's first call): a per-op
        # class adds only its __call__, and is never subscripted.
        pass


_PT2 = "pt2_compliant_tag"

# Guards the one-time binding of a definition's OpOverload and call code.
_bind_lock = RegistryLock()


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
        from customop.library._options import check_mutates_against  # noqa: PLC0415 - as make_options

        check_mutates_against(schema, options)
        return schema, {}
    # Inference loads on the first @custom_op, not at `import customop` (issue #12).
    from customop.schema import infer_schema_details  # noqa: PLC0415 - see above

    try:
        details = infer_schema_details(
            fn, mutates_args=options.mutates_args, op_name=options.name, tags=options.tags
        )
    except SchemaError as error:  # name the op being defined, not only the function
        # The same class (an ExclusiveTagsError stays an AssertionError too).
        raise type(error)(f"custom_op {options.name!r}: {error}") from None
    return details.schema, dict(details.choices)


def _define(
    options: CustomOpOptions, fn: Callable[P, R], dispatcher: Dispatcher
) -> CustomOpDef[P, R]:
    schema, choices = _schema_of(options, fn)
    check_device_input(schema, options.device_types, "custom_op")
    keys = device_keys(dispatcher, options.device_types, "custom_op")
    source = caller_source()
    # One write under the registration lock: see the lifetime NOTE below.
    with dispatcher.lock:
        old = live_definition(dispatcher, options.name)
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
        body = checked_returns(enum_kernel(fn, schema, choices), schema, options.tags)
        try:
            kernels: dict[DispatchKey | str, Callable[..., Any]] = {key: body for key in keys}
            fn_name = getattr(fn, "__name__", "op")
            hint = f"{fn_name}.register_kernel('{{device}}', fn)"
            fake = trivial_fake(schema)
            if fake is not None and DispatchKey.Meta not in kernels:
                kernels[DispatchKey.Meta] = fake  # see trivial_fake: torch's rule
            # torch's custom_op marks every op pt2_compliant_tag (once), first.
            tags = (_PT2, *(tag for tag in options.tags if tag != _PT2))
            library.define(schema, tags=tags, source=source, kernels=kernels, kernel_hint=hint)
        except BaseException:
            library.close()
            raise
        handle = dispatcher.find_schema_or_throw(options.name)
        checks = choice_checks(schema, choices)
        if checks:
            library._adopt(attach_value_checks(handle, schema, checks, source))
        definition = CustomOpDef(options, fn, schema, library, handle=handle, source=source)
        record_definition(definition)
    return definition


@overload
def custom_op(
    name: str,
    fn: Callable[P, R],
    /,
    *,
    mutates_args: Iterable[str] | MutatesArgs,
    device_types: str | Sequence[str] | None = None,
    schema: str | None = None,
    tags: TagsLike = (),
    dispatcher: Dispatcher | None = None,
) -> CustomOpDef[P, R]: ...


@overload
def custom_op(
    name: str,
    fn: None = None,
    /,
    *,
    mutates_args: Iterable[str] | MutatesArgs,
    device_types: str | Sequence[str] | None = None,
    schema: str | None = None,
    tags: TagsLike = (),
    dispatcher: Dispatcher | None = None,
) -> Callable[[Callable[P, R]], CustomOpDef[P, R]]: ...


def custom_op(
    name: str,
    fn: Callable[P, R] | None = None,
    /,
    *,
    # None: omitted. The overloads require it (mypy); at run time it gets a clear error.
    mutates_args: Iterable[str] | MutatesArgs | None = None,
    device_types: str | Sequence[str] | None = None,
    schema: str | None = None,
    tags: TagsLike = (),
    dispatcher: Dispatcher | None = None,
) -> CustomOpDef[P, R] | Callable[[Callable[P, R]], CustomOpDef[P, R]]:
    """Make ``fn`` an operator ``name`` (``"ns::op"``), as ``torch.library.custom_op`` does.

    ``mutates_args`` names the tensor parameters ``fn`` writes to (or is
    `MutatesArgs.UNKNOWN`); ``device_types`` (``"cpu"``, ``"cuda"``, ...)
    limits the body to those devices, else it serves all of them
    (CompositeExplicitAutograd); ``schema`` overrides inference.

    Args:
        name: the operator's name, ``"ns::op"``.
        fn: the function; omit it to use ``custom_op`` as a decorator.
        mutates_args: the parameters ``fn`` writes to (any collection of names:
            a tuple, list or set, as torch takes), ``()`` for none, or
            `MutatesArgs.UNKNOWN`.
        device_types: the devices the body serves; default: all of them.
        schema: the schema text, instead of inferring it from the type hints.
        tags: tags of the op.
        dispatcher: where to register; default: ``customop.dispatcher``.

    Returns:
        The `CustomOpDef` (call it like ``fn``, mypy-checked), or, without ``fn``,
        a decorator that returns it.

    Raises:
        ValueError: the name is not ``"ns::op"``, or the type hints give no
            schema (a `SchemaError` naming the parameter).
        RegistrationError: an option is invalid, e.g. an unknown device type.

    Examples:
        >>> import numpy as np
        >>> import customop
        >>> d = customop.Dispatcher()
        >>> @customop.custom_op("doc::scale", mutates_args=(), dispatcher=d)
        ... def scale(x: np.ndarray, factor: float = 2.0) -> np.ndarray:
        ...     return x * factor
        >>> print(scale.schema)
        doc::scale(Tensor x, float factor=2.) -> Tensor
        >>> scale(np.arange(3.0))
        array([0., 2., 4.])
    """
    if mutates_args is None:
        raise TypeError(
            f"custom_op {name!r}: mutates_args is missing. customop must know which tensor "
            "arguments the function writes to: callers, tracing and autograd assume the "
            "others are unchanged (torch requires it too). Pass mutates_args=() when it "
            "changes none of its inputs, the names of those it writes to, or "
            "MutatesArgs.UNKNOWN."
        )
    # The options model is built at the first @custom_op, not at `import customop` (issue #12).
    from customop.library._options import make_options  # noqa: PLC0415 - see above

    # NOTE: decorator-or-call, as in torch: `custom_op(name, fn, ...)` defines
    # now; `@custom_op(name, ...)` returns the decorator. The @overload pair
    # above gives mypy the right type for each form.
    options = make_options(
        name=name,
        mutates_args=mutates_args,
        device_types=device_types,
        schema_text=schema,
        tags=read_tags(tags),
    )
    target = default_dispatcher if dispatcher is None else dispatcher

    def define(body: Callable[P, R]) -> CustomOpDef[P, R]:
        return _define(options, body, target)

    return define if fn is None else define(fn)


# -- how long a definition lives, and what removing it frees ------------------------
#
# How long a ``@custom_op`` definition lives, and what removing it frees.
#
# NOTE: the live definition of each name is the op's `DEFINITION` extra on its
# dispatcher entry (``customop.ops``), not a table beside the dispatcher: a
# private dispatcher, with every definition made on it, is then freed with its
# last user, and nothing holds a removed definition. The extra's handle is
# adopted by the definition's library, so it goes whenever that library closes
# (`op.remove()`, a redefinition, or closing the library by hand), together
# with the definition's call code.
#
# All of it happens under the dispatcher's registration lock (re-entrant), so
# a redefinition (close the old library, define anew, record) is one write:
# lookups through ``customop.ops`` and calls that find the op undefined wait
# for the lock before they decide, and never see the gap.


def live_definition(dispatcher: Dispatcher, name: str) -> CustomOpDef[Any, Any] | None:
    """The @custom_op definition of ``name`` that is live on ``dispatcher``, if any."""
    handle = dispatcher.find_op(name)
    found = None if handle is None else handle.extra(DEFINITION)
    return found if isinstance(found, CustomOpDef) else None


def record_definition(definition: CustomOpDef[Any, Any]) -> None:
    """Make ``definition`` the live one of its name, until its library closes.

    The extra's record is its own undo, and tells the definition when it goes
    (`CustomOpDef.extra_removed`): one object per op, where a handle and a
    closure would be several (each costs time in every full gc collection).
    """
    dispatcher = definition.dispatcher
    record = dispatcher._add_extra(
        definition.operator, DEFINITION, definition, definition.source, then=definition
    )
    definition._library._adopt(record)


def retire(definition: CustomOpDef[Any, Any]) -> None:
    """What goes with a definition's `DEFINITION` extra: its call code."""
    forget("generated", definition.name)
    definition._op = None  # its call code, checks and cache go with it


def remove_definition(definition: CustomOpDef[Any, Any]) -> None:
    """Remove ``definition``'s op and kernels, and free what it holds (idempotent)."""
    with definition.dispatcher.lock:
        definition._library.close()

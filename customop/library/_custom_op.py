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

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from customop.dispatch import Dispatcher, RegistrationHandle
from customop.dispatch._global import dispatcher as default_dispatcher
from customop.dispatch._kernel import caller_source
from customop.exceptions import RegistrationError
from customop.library._callgen import CallSite
from customop.library._checks import Check
from customop.library._hooks import device_keys, register_fake_on, register_kernel_on
from customop.library._library import Library
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


class CustomOpOptions(BaseModel):
    """The options of ``@custom_op``, checked before anything is registered."""

    # defer_build: compiled at the first @custom_op, not at `import customop`.
    model_config = ConfigDict(
        frozen=True, extra="forbid", arbitrary_types_allowed=True, defer_build=True
    )

    name: str
    mutates_args: tuple[str, ...] | MutatesArgs
    device_types: tuple[str, ...] | None = None
    schema_text: str | None = None
    tags: tuple[str, ...] = ()

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        parsed = parse_operator_name(name)
        if not parsed.namespace or parsed.overload:
            raise ValueError(
                f"name {name!r} must be 'namespace::name' (no overload). The namespace keeps "
                "libraries apart. Write e.g. 'mylib::my_op'."
            )
        return name

    @field_validator("mutates_args", mode="before")
    @classmethod
    def _check_mutates(cls, value: object) -> object:
        if isinstance(value, str) and not isinstance(value, MutatesArgs):
            raise ValueError(
                f"mutates_args={value!r} is a string. It names the mutated parameters. "
                "Pass a sequence of names, e.g. [" + repr(value) + "], or MutatesArgs.UNKNOWN."
            )
        return value

    @field_validator("device_types", mode="before")
    @classmethod
    def _one_device(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value


def _options(**values: Any) -> CustomOpOptions:
    try:
        return CustomOpOptions(**values)
    except ValidationError as error:
        item = error.errors(include_url=False)[0]
        field = ".".join(str(p) for p in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        raise ValueError(f"custom_op: option {field!r}: {message}") from None


class CustomOpDef(Generic[P, R]):
    """An operator made by ``@custom_op``: call it like the function it was made from.

    ``register_kernel`` and ``register_fake`` add kernels; ``schema`` and ``op``
    (the `OpOverload`) describe it. Redefining the same name replaces this
    definition; calling a replaced one raises, naming the new definition.
    """

    _site: CallSite

    def __init__(
        self,
        options: CustomOpOptions,
        fn: Callable[P, R],
        schema: FunctionSchema,
        library: Library,
        overload: OpOverload,
    ) -> None:
        self.options = options
        self._fn = fn
        self._schema = schema
        self._library = library
        self._op = overload
        self._replaced_by: str | None = None
        self.source = caller_source()
        self.__doc__ = fn.__doc__
        self.__name__ = getattr(fn, "__name__", options.name)
        self.__wrapped__ = fn

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._op(*args, **kwargs)  # type: ignore[no-any-return]

    @property
    def name(self) -> str:
        return self.options.name

    @property
    def schema(self) -> FunctionSchema:
        return self._schema

    @property
    def op(self) -> OpOverload:
        """The `OpOverload` (also ``customop.ops.<ns>.<name>.default``)."""
        return self._op

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
            return register_kernel_on(self._library, self._op, device_types, kernel)

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
            return register_fake_on(self._library, self._op, fake)

        return register if fn is None else register(fn)

    def __repr__(self) -> str:
        state = " (replaced)" if self._replaced_by else ""
        return f"<CustomOpDef {self._schema}{state}>"


# (dispatcher id, name) -> the live definition, so a redefinition can replace it.
_live: dict[tuple[int, str], CustomOpDef[Any, Any]] = {}
_live_lock = threading.Lock()


def _choice_checks(schema: FunctionSchema, choices: dict[str, Choices]) -> dict[int, Check]:
    checks: dict[int, Check] = {}
    for index, arg in enumerate(schema.arguments):
        found = choices.get(arg.name)
        if found is not None:
            checks[index] = _one_of(found)
    return checks


def _one_of(choices: Choices) -> Check:
    allowed = frozenset(choices.values)
    members = frozenset(choices.enum) if choices.enum is not None else frozenset()

    def check(value: object) -> bool:
        return value in members or (isinstance(value, str) and value in allowed)

    check.choices = choices.values  # type: ignore[attr-defined]  # listed in the TypeError
    return check


def _enum_kernel(
    fn: Callable[..., Any], schema: FunctionSchema, choices: dict[str, Choices]
) -> Callable[..., Any]:
    """``fn`` receiving Enum members for its Enum parameters, whichever way they were passed."""
    enums = {name: c for name, c in choices.items() if c.enum is not None}
    if not enums:
        return fn
    npos = sum(1 for arg in schema.arguments if not arg.kwarg_only)
    positions = {i: enums[a.name] for i, a in enumerate(schema.arguments[:npos]) if a.name in enums}

    def member(value: Any, found: Choices) -> Any:
        return value if isinstance(value, found.enum) else found.to_python(value)  # type: ignore[arg-type]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        args = tuple(member(v, positions[i]) if i in positions else v for i, v in enumerate(args))
        kwargs = {k: member(v, enums[k]) if k in enums else v for k, v in kwargs.items()}
        return fn(*args, **kwargs)

    kernel.__wrapped__ = fn  # type: ignore[attr-defined]
    return kernel


def _check_mutates_against(schema: FunctionSchema, options: CustomOpOptions) -> None:
    """An explicit schema and ``mutates_args`` must say the same (torch checks this too)."""
    if isinstance(options.mutates_args, MutatesArgs):
        return
    written = set(schema.mutated_arguments)
    if written != set(options.mutates_args):
        raise ValueError(
            f"custom_op: {options.name!r}: mutates_args={sorted(options.mutates_args)!r} but the "
            f"schema writes {sorted(written)!r}. The schema's (a!) annotations are what callers "
            "and tracing rely on. Make mutates_args name exactly the arguments the schema writes."
        )


def _define(
    options: CustomOpOptions, fn: Callable[P, R], dispatcher: Dispatcher
) -> CustomOpDef[P, R]:
    if options.schema_text is not None:
        schema = parse_schema(options.name + options.schema_text.strip())
        choices: dict[str, Choices] = {}
        _check_mutates_against(schema, options)
    else:
        details = infer_schema_details(fn, mutates_args=options.mutates_args, op_name=options.name)
        schema, choices = details.schema, dict(details.choices)
    keys = device_keys(dispatcher, options.device_types, "custom_op")
    ns = schema.namespace
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
            old._replaced_by = caller_source()
            old._library.close()
        library = Library(ns, "FRAGMENT", dispatcher=dispatcher)
        try:
            library.define(schema, tags=options.tags)
            body = _enum_kernel(fn, schema, choices)
            for dispatch_key in keys:
                library.impl(schema.name.name, body, dispatch_key)  # type: ignore[union-attr]
        except BaseException:
            library.close()
            raise
        handle = dispatcher.find_schema_or_throw(options.name)
        overload = bind_overload(handle, options.name, _choice_checks(schema, choices))
        # Calls skip a layer: the def's own class gets the overload's generated
        # __call__ (it ignores its instance argument), so op(x) costs what op.op(x) does.
        cls: type[CustomOpDef[P, R]] = CustomOpDef
        if overload._site is not None:
            call = type(overload).__call__
            cls = type(f"CustomOpDef[{options.name}]", (CustomOpDef,), {"__call__": call})
        definition = cls(options, fn, schema, library, overload)
        if overload._site is not None:
            overload._site.guard = definition._guard
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
    options = _options(
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

"""`OpOverload`: one operator overload, callable with its schema's exact signature.

An overload with generated call code (see `_callgen`) moves, on its first own
call, to a small subclass of its own whose ``__call__`` is that code, so a
call costs one method call plus the generated fast path. Binding makes no
class: most overloads are bound for a `CustomOpDef` or a packet, which take
the generated function directly, and a class costs more than the binding.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from customop.dispatch import Dispatcher, DispatchKeySet, OperatorHandle
from customop.exceptions import RegistrationError, UnknownOperatorError
from customop.ops._binding import python_signature
from customop.ops._callgen import CallCode, can_generate, compile_call, python_default
from customop.ops._callhooks import adopt_overload
from customop.ops._checks import Check, attached_value_checks, is_tensor_check
from customop.ops._compiling import refuse_under_dynamo
from customop.ops._resolve import choose_overload
from customop.ops._swap import swap_class
from customop.schema import FunctionSchema, OperatorName

__all__ = ["OpOverload", "bind_overload"]


class _Tag(str):
    """A tag name that compares equal to ``torch.Tag`` members by name (torch unimported)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        kind = type(other)
        if kind.__name__ == "Tag" and kind.__module__.partition(".")[0] == "torch":
            return str.__eq__(self, other.name)  # type: ignore[attr-defined]
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = str.__hash__


class OpOverload:
    """``ops.<ns>.<name>.<overload>``: a pre-bound operator overload.

    Calling it binds the arguments to ``schema`` (defaults filled, keyword-only
    enforced, types checked) and dispatches. ``redispatch(keyset, ...)`` runs
    the kernel for an explicit key set.
    """

    # __weakref__: jax.jit (and functools caches) hold the function they wrap weakly.
    __slots__ = ("__weakref__", "_handle", "_site", "schema")

    _handle: OperatorHandle
    _site: CallCode | None
    schema: FunctionSchema

    def __init__(
        self, handle: OperatorHandle, schema: FunctionSchema, site: CallCode | None
    ) -> None:
        self._handle = handle
        self._site = site
        self.schema = schema

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        refuse_under_dynamo(str(self.schema.name))  # first calls and the generic path only
        site = self._site
        if site is not None:
            return self._specialize(site)(*args, **kwargs)
        # Only for schemas whose names cannot be Python parameters (keywords,
        # varargs): others get a generated __call__ on their own subclass.
        self.check_current()
        if kwargs:
            names = {arg.name for arg in self.schema.arguments}
            kwargs = {_unmangled(k, names): v for k, v in kwargs.items()}
        if not self.schema.is_vararg:
            # Bind and check like generated code would: the same errors, defaults filled.
            choose_overload(str(self.name), [self], args, kwargs)
            args, kwargs = _filled(self.schema, args, kwargs)
        return self._handle(*args, **kwargs)

    def _specialize(self, site: CallCode) -> Callable[..., Any]:
        swap_class(
            self, site.function, name=f"OpOverload[{self.schema.name}]", only_from=OpOverload
        )
        return site.function

    @property
    def name(self) -> OperatorName:
        """The overload's operator name (namespace, name and overload)."""
        assert self.schema.name is not None
        return self.schema.name

    @property
    def overload_name(self) -> str:
        """The overload name, ``"default"`` for the default overload."""
        return self.name.overload or "default"

    @property
    def __signature__(self) -> inspect.Signature:
        """The schema as a Python signature (for `inspect.signature` and IDEs)."""
        return python_signature(self.schema, method=False)

    @property
    def call_code(self) -> CallCode | None:
        """The generated call code's state (checks, cache, shape facts), or None for a
        schema whose names cannot be Python parameters. Read-only, for adapters."""
        return self._site

    @property
    def handle(self) -> OperatorHandle:
        """The dispatcher's handle of this operator."""
        return self._handle

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher that this overload's calls go through."""
        return self._handle.dispatcher

    @property
    def tags(self) -> list[str]:
        """The op's tags, as torch's ``OpOverload.tags`` (a list).

        Each is a str that also equals the ``torch.Tag`` member of its name, so
        ``torch.Tag.pointwise in op.tags`` holds as it does in torch.
        """
        return [_Tag(tag) for tag in self._handle.tags]

    @property
    def is_current(self) -> bool:
        """Whether the operator is still defined with this overload's schema."""
        return _live_schema(self._handle) == self.schema

    def check_current(self) -> None:
        """Raise if the operator was redefined with another schema since this was made."""
        if self._site is not None:
            self._site.check_schema()
            return
        live = _live_schema(self._handle)
        if live is not None and live != self.schema:
            raise RegistrationError(
                f"{self.name}: this OpOverload was made for {self.schema}, but the operator "
                f"has been redefined as {live}. Look it up again in customop.ops."
            )

    def redispatch(self, keyset: DispatchKeySet, /, *args: Any, **kwargs: Any) -> Any:
        """Run the kernel for ``keyset`` directly (from a boxed kernel: the keys below yours).

        Args:
            keyset: the keys to dispatch on, usually ``keyset.below(my_key)``.
            *args: the op's arguments.
            **kwargs: the op's keyword arguments.

        Returns:
            What the selected kernel returns.
        """
        return self._handle.redispatch(keyset, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<OpOverload {self.name.qualified_name}.{self.overload_name}: {self.schema}>"


def _filled(
    schema: FunctionSchema, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Positional arguments then keyword-only ones, every default filled in."""
    positional = list(args)
    named: dict[str, Any] = {}
    for index, arg in enumerate(schema.arguments):
        if index < len(args):
            continue
        value = kwargs[arg.name] if arg.name in kwargs else python_default(arg)
        if arg.kwarg_only:
            named[arg.name] = value
        else:
            positional.append(value)
    return tuple(positional), named


def _unmangled(name: str, names: set[str]) -> str:
    # A keyword-only argument named like a Python keyword is passed as `from_=`.
    return name[:-1] if name.endswith("_") and name not in names and name[:-1] in names else name


def bind_overload(
    handle: OperatorHandle,
    api: str = "",
    value_checks: dict[int, Check] | None = None,
    schema: FunctionSchema | None = None,
) -> OpOverload:
    """An `OpOverload` of ``schema`` (default: ``handle``'s current one), with its
    generated ``__call__``. ``value_checks`` replace the type checks of some
    arguments (by index); by default those attached to the schema, if any.

    Args:
        handle: the operator.
        api: what errors name the calls by (default: the op's name).
        value_checks: checks by argument index, replacing their type checks.
        schema: the schema to bind (default: the op's current one).

    Returns:
        The overload (adapters' call hooks have seen it).
    """
    schema = handle.schema if schema is None else schema
    if value_checks is None:
        value_checks = attached_value_checks(handle, schema)
    if not can_generate(schema):
        return adopt_overload(handle.dispatcher, OpOverload(handle, schema, None))
    is_tensor = is_tensor_check(handle.dispatcher)
    site = CallCode(handle, schema, is_tensor, api or str(schema.name), value_checks)
    compile_call(site)
    return adopt_overload(handle.dispatcher, OpOverload(handle, schema, site))


def _live_schema(handle: OperatorHandle) -> FunctionSchema | None:
    """The op's schema now, or None: one read. (``has_schema`` then ``schema`` is two:
    a def removed by another thread in between makes the second raise.)"""
    try:
        return handle.schema
    except UnknownOperatorError:
        return None

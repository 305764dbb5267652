"""Registration records and argument coercion shared by the `Dispatcher` methods."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeAlias, final

from customop.dispatch._keys import DispatchKey
from customop.dispatch._operator import OperatorHandle
from customop.exceptions import RegistrationError
from customop.schema import FunctionSchema, OperatorName, parse_operator_name, parse_schema

__all__ = [
    "KeyLike",
    "OperatorListener",
    "Registration",
    "as_listener",
    "check_kernel",
    "check_namespace",
    "coerce_schema",
    "coerce_tags",
    "op_name",
]

#: A dispatch key, or its name (``"CPU"``, or a renamed backend such as ``"dask"``).
KeyLike: TypeAlias = DispatchKey | str


class OperatorListener:
    """Hears operators come and go (PyTorch's ``OpRegistrationListener``): subclass it.

    ``on_operator_registered`` runs when an op gets its def, and, when the
    listener is added, once for every op already defined. ``on_operator_deregistered``
    runs when an op's def is removed, while its schema is still readable.
    ``on_operator_changed`` runs after a kernel or an extra came or went, with the
    op's table already rebuilt. All run under the registration lock, so events
    arrive in order. Each method does nothing unless overridden.
    """

    def on_operator_registered(self, op: OperatorHandle) -> None:
        """Called when an operator gets its def (replayed for existing ones on ``add_listener``).

        Args:
            op: the operator that was defined.
        """

    def on_operator_deregistered(self, op: OperatorHandle) -> None:
        """Called when an operator's last def is removed.

        Args:
            op: the operator whose schema went away.
        """

    def on_operator_changed(self, op: OperatorHandle) -> None:
        """Called after a kernel or an extra of the operator was registered or removed.

        Args:
            op: the operator whose registrations changed.
        """


@final
class _Forwarding(OperatorListener):
    """A listener object that does not subclass `OperatorListener` (a duck-typed one,
    which earlier releases accepted): its methods, looked up once when it is added."""

    __slots__ = ("changed", "deregistered", "listener", "registered")

    def __init__(self, listener: object) -> None:
        self.listener = listener
        self.registered = getattr(listener, "on_operator_registered", None)
        self.deregistered = getattr(listener, "on_operator_deregistered", None)
        self.changed = getattr(listener, "on_operator_changed", None)

    def on_operator_registered(self, op: OperatorHandle) -> None:
        self.registered(op)  # type: ignore[misc]  # checked callable by as_listener

    def on_operator_deregistered(self, op: OperatorHandle) -> None:
        self.deregistered(op)  # type: ignore[misc]  # checked callable by as_listener

    def on_operator_changed(self, op: OperatorHandle) -> None:
        if self.changed is not None:
            self.changed(op)

    def __repr__(self) -> str:
        return repr(self.listener)


def as_listener(listener: object) -> OperatorListener:
    """``listener`` as an `OperatorListener`; TypeError if it cannot be one."""
    if isinstance(listener, OperatorListener):
        return listener
    wrapped = _Forwarding(listener)
    if callable(wrapped.registered) and callable(wrapped.deregistered):
        return wrapped
    raise TypeError(
        f"add_listener: {listener!r:.200} is not an OperatorListener. The dispatcher calls "
        "its on_operator_registered(op) and on_operator_deregistered(op) methods. Define both."
    )


@final
class Registration:
    """A def, library, listener, rename or array type; ``alive`` turns off on removal."""

    # Written out rather than a slotted dataclass, whose class is built twice and
    # whose methods are generated with exec: most of this module's import (issue #12).
    __slots__ = ("alive", "debug", "source", "value")

    def __init__(
        self, source: str, debug: str = "", value: object = None, alive: bool = True
    ) -> None:
        self.source = source
        self.debug = debug
        self.value = value
        self.alive = alive

    def __repr__(self) -> str:
        return (
            f"Registration(source={self.source!r}, debug={self.debug!r}, "
            f"value={self.value!r}, alive={self.alive!r})"
        )

    @property
    def where(self) -> str:
        return f"{self.source} ({self.debug})" if self.debug else self.source


def op_name(op: object, api: str) -> OperatorName:
    """The `OperatorName` of a name text, name model or `OperatorHandle`."""
    if isinstance(op, OperatorName):
        return op
    if isinstance(op, str):
        return parse_operator_name(op)
    if isinstance(op, OperatorHandle):
        return op.name
    raise TypeError(
        f"{api}: expected an operator name such as 'mylib::add', got {op!r}. Operators "
        "are identified by 'namespace::name.overload'. Pass the name as a str, an "
        "OperatorName, or an OperatorHandle."
    )


def coerce_schema(schema: object) -> tuple[FunctionSchema, OperatorName]:
    """The schema to define and its name, refusing what the dispatcher cannot register."""
    if isinstance(schema, str):
        schema = parse_schema(schema)
    if not isinstance(schema, FunctionSchema):
        raise TypeError(
            f"register_def: expected a FunctionSchema or schema text, got {schema!r}. "
            "A def registers an operator's signature. Pass e.g. "
            "'mylib::add(Tensor x, Tensor y) -> Tensor'."
        )
    name = schema.name
    if name is None:
        raise RegistrationError(
            f"register_def: schema {str(schema)!r} has no operator name. The dispatcher "
            "finds operators by name. Write 'namespace::name(...) -> ...'."
        )
    names = [arg.name for arg in schema.arguments]
    duplicates = (
        sorted({n for n in names if names.count(n) > 1}) if len(set(names)) < len(names) else []
    )
    if duplicates:
        raise RegistrationError(
            f"register_def: schema {str(schema)!r} repeats argument name {duplicates[0]!r}. "
            "Calls bind keyword arguments by name, so names must be unique. Rename one."
        )
    return schema, name


def coerce_tags(tags: Iterable[str]) -> tuple[str, ...]:
    values = (tags,) if isinstance(tags, str) else tuple(tags)
    bad = [tag for tag in values if not isinstance(tag, str)]
    if isinstance(tags, str) or bad:
        shown = tags if isinstance(tags, str) else bad[0]
        raise TypeError(
            f"register_def: tag {shown!r} is not in a sequence of str. Tags are names such "
            "as 'pointwise', kept per operator. Pass a sequence, like tags=('pointwise',)."
        )
    return values


def check_kernel(kernel: object, api: str) -> Callable[..., Any]:
    if not callable(kernel):
        raise TypeError(
            f"{api}: kernel {kernel!r} is not callable. The dispatcher calls the kernel "
            "to run the op. Pass a function (or `fallthrough`)."
        )
    return kernel


def check_namespace(namespace: object, api: str) -> str:
    if not isinstance(namespace, str) or not namespace.isidentifier():
        raise RegistrationError(
            f"{api}: namespace {namespace!r} is not an identifier. Operator names are "
            "'namespace::name', so the namespace must be one. Use letters, digits and "
            "underscores, like 'mylib'."
        )
    return namespace

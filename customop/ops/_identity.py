"""Which op is this: one resolver from any op object (or name) to its `OperatorHandle`.

torch has one, ``_maybe_get_opdef``; customop's is `operator_handle`, by
``isinstance`` on the call objects (never by probing attributes), and
`definition_of` for the front-end object that defined an op (a
``@custom_op``'s `CustomOpDef`), found through the op's `DEFINITION` extra
rather than a table beside the dispatcher.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from customop.dispatch import Dispatcher, Extra, OperatorHandle, RegistrationHandle

if TYPE_CHECKING:
    from customop.ops._overload import OpOverload

__all__ = ["DEFINITION", "OpDefinition", "definition_of", "operator_handle"]


class OpDefinition:
    """A front-end object that defined an op and is called like it (`CustomOpDef`).

    Adapters that give an op's call objects new call code ask it for them
    (`call_objects`); registration functions take it wherever they take an op.
    Subclasses define every member below. (A plain base class, not an ABC: a
    definition's class is specialized per op on its first call, and ABCMeta
    would make that, and every call through the object, dearer.)
    """

    __slots__ = ()

    @property
    def operator(self) -> OperatorHandle:
        """The dispatcher's handle of the op this object defined."""
        raise NotImplementedError

    @property
    def replaced(self) -> bool:
        """Whether a newer definition of the name (or a removal) retired this one."""
        raise NotImplementedError

    def call_objects(self) -> tuple[Any, ...]:
        """The objects made for calling the op: this one, and its bound `OpOverload`."""
        raise NotImplementedError

    def bound_overload(self) -> OpOverload:
        """The `OpOverload` this definition calls through (bound on first use)."""
        raise NotImplementedError

    def adopt(self, registration: RegistrationHandle) -> RegistrationHandle:
        """Own ``registration`` (remove it with this definition); returns it."""
        raise NotImplementedError


#: The live front-end definition of an op (a @custom_op's), owned by its library.
DEFINITION: Final[Extra[OpDefinition]] = Extra(
    "definition", owner="customop.library", describe=lambda d: "@custom_op"
)


def definition_of(op: object, dispatcher: Dispatcher) -> OpDefinition | None:
    """The live `OpDefinition` of ``op`` (an op object, handle or ``"ns::name"``), or None.

    Args:
        op: an op object, an `OperatorHandle` or a name.
        dispatcher: where to look a name up.

    Returns:
        The definition (a ``@custom_op``'s `CustomOpDef`), or None.
    """
    if isinstance(op, OpDefinition):
        return op
    if isinstance(op, str):
        handle = dispatcher.find_op(op)
        return None if handle is None else handle.extra(DEFINITION)
    if isinstance(op, OperatorHandle):
        return op.extra(DEFINITION)
    return None


def find_handle(op: object, dispatcher: Dispatcher, api: str) -> OperatorHandle | None:
    """`operator_handle`, but None for a name no op has (a lookup, not a registration).

    Args:
        op: the op, in any spelling `operator_handle` takes.
        dispatcher: where to look a name up.
        api: what errors name the caller by.

    Returns:
        The handle, or None.
    """
    if isinstance(op, str):
        return dispatcher.find_op(op)
    return operator_handle(op, dispatcher, api)


def operator_handle(op: object, dispatcher: Dispatcher, api: str) -> OperatorHandle:
    """The `OperatorHandle` of an `OpDefinition`, an `OpOverload`, a handle or a name.

    Args:
        op: the op, in any of those spellings.
        dispatcher: where to look a name up.
        api: what errors name the caller by.

    Returns:
        The handle.

    Raises:
        TypeError: ``op`` is none of those.
        UnknownOperatorError: a name no defined op has.
    """
    from customop.ops._overload import OpOverload  # noqa: PLC0415 -- OpOverload imports this

    if isinstance(op, OperatorHandle):
        return op
    if isinstance(op, str):
        return dispatcher.find_schema_or_throw(op)
    if isinstance(op, OpDefinition):
        return op.operator
    if isinstance(op, OpOverload):
        return op.handle
    raise TypeError(
        f"{api}: expected an op (a CustomOpDef, an OpOverload or a name like 'ns::op'), "
        f"got {op!r:.200}. Registrations attach to a defined operator. Pass the op or its name."
    )

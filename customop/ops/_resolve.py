"""Choosing the overload of a packet call: the one schema the arguments bind to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from customop.exceptions import UnknownOperatorError
from customop.ops._checks import Check, is_tensor_check, value_check

if TYPE_CHECKING:
    from customop.ops._overload import OpOverload

__all__ = ["choose_overload"]

_MISSING = object()


def _bind(overload: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """Why the arguments do not bind to the overload's schema, or None if they do."""
    schema = overload.schema
    positional = [a for a in schema.arguments if not a.kwarg_only]
    if len(args) > len(positional):
        return f"{len(args)} positional arguments were given, and it takes {len(positional)}"
    names = {a.name for a in schema.arguments}
    unknown = [k for k in kwargs if k not in names]
    if unknown:
        return f"it has no argument {unknown[0]!r}"
    checks = _checks_of(overload)
    for index, arg in enumerate(schema.arguments):
        if index < len(args):
            if arg.name in kwargs:
                return f"argument {arg.name!r} was given twice, by position and by name"
            value = args[index]
        else:
            value = kwargs.get(arg.name, _MISSING)
            if value is _MISSING:
                if arg.default is None:
                    return f"required argument {arg.name!r} is missing"
                continue
        if not checks[index](value):
            return f"argument {arg.name!r} expects {arg.type}, got {type(value).__qualname__}"
    return None


def _checks_of(overload: OpOverload) -> tuple[Check, ...]:
    """The overload's argument checks: its call site's, built once at bind time."""
    site = overload._site
    if site is not None:
        return site.checks
    is_tensor = is_tensor_check(overload.dispatcher)
    return tuple(value_check(arg.type, is_tensor) for arg in overload.schema.arguments)


def choose_overload(
    packet: str, candidates: list[OpOverload], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> OpOverload:
    """The one overload the call binds to; a TypeError listing the schemas otherwise."""
    if not candidates:
        raise UnknownOperatorError(
            f"{packet}: the operator is no longer defined (its definitions were removed). "
            "A packet calls the overloads defined now, and there are none. Define the op "
            "again, or stop calling the packet."
        )
    reasons = [(overload, _bind(overload, args, kwargs)) for overload in candidates]
    fitting = [overload for overload, reason in reasons if reason is None]
    if len(fitting) == 1:
        return fitting[0]
    if not fitting and len(candidates) == 1:
        raise TypeError(
            f"{packet}: the arguments do not bind to its schema {candidates[0].schema}: "
            f"{reasons[0][1]}. Pass arguments that fit the schema."
        )
    if not fitting:
        lines = "".join(f"\n  {o.schema}: {reason}" for o, reason in reasons)
        example = f"{packet.replace('::', '.')}.{candidates[0].overload_name}(...)"
        raise TypeError(
            f"{packet}: no overload binds these arguments. A packet call picks the overload "
            "whose schema fits the arguments, types included. Pass arguments that fit one "
            f"of the schemas below, or call that overload directly, e.g. {example}. "
            f"Candidates:{lines}"
        )
    lines = "".join(f"\n  {o.schema}" for o in fitting)
    raise TypeError(
        f"{packet}: the call is ambiguous: {len(fitting)} overloads bind these arguments. "
        f"A packet call needs exactly one. Call an overload directly, e.g. "
        f"{packet.replace('::', '.')}.{fitting[0].overload_name}(...). Candidates:{lines}"
    )

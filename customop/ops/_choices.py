"""Values of ``Literal[...]`` and ``Enum`` parameters of a ``@custom_op``: checks and members.

Such a parameter is a schema ``str`` (or ``str?``, ``str[]``, ``str?[]``)
whose values are limited to the choices. A call passes a string or an Enum
member, ``None`` where the type is optional, and a list where it is a list;
the kernel of an Enum parameter receives members, whichever way they came.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from customop.ops._checks import Check
from customop.schema import FunctionSchema, ListType, OptionalType, SchemaType

if TYPE_CHECKING:
    from customop.schema import Choices

__all__ = ["choice_checks", "enum_kernel"]


def choice_checks(schema: FunctionSchema, choices: dict[str, Choices]) -> dict[int, Check]:
    """Per argument position, the check of a parameter that has choices."""
    checks: dict[int, Check] = {}
    for index, arg in enumerate(schema.arguments):
        found = choices.get(arg.name)
        if found is not None:
            checks[index] = _one_of(found, arg.type)
    return checks


def _optional(tp: SchemaType) -> tuple[bool, SchemaType]:
    return (True, tp.elem) if isinstance(tp, OptionalType) else (False, tp)


def _one_of(choices: Choices, tp: SchemaType) -> Check:
    allowed = frozenset(choices.values)
    enum = choices.enum

    def one(value: object) -> bool:
        if enum is not None and isinstance(value, enum):
            return True
        return isinstance(value, str) and value in allowed

    optional, inner = _optional(tp)
    if isinstance(inner, ListType):
        elem_optional = isinstance(inner.elem, OptionalType)

        def check(value: object) -> bool:
            if value is None:
                return optional
            return isinstance(value, list | tuple) and all(
                (elem_optional and item is None) or one(item) for item in value
            )

    else:

        def check(value: object) -> bool:
            return (optional and value is None) or one(value)

        if not optional:
            # The generated fast path tests membership in this set once the type matched.
            members = frozenset(enum) if enum is not None else frozenset()
            check.allowed = members | allowed  # type: ignore[attr-defined]

    check.choices = choices.values  # type: ignore[attr-defined]  # listed in the TypeError
    return check


def _member(value: Any, found: Choices) -> Any:
    """The Enum member for ``value`` (a member or its text); lists element-wise; None kept."""
    if value is None or isinstance(value, found.enum):  # type: ignore[arg-type]
        return value
    if isinstance(value, list | tuple):
        return [_member(item, found) for item in value]
    return found.to_python(value)


def enum_kernel(
    fn: Callable[..., Any], schema: FunctionSchema, choices: dict[str, Choices]
) -> Callable[..., Any]:
    """``fn`` receiving Enum members for its Enum parameters, whichever way they were passed."""
    enums = {name: c for name, c in choices.items() if c.enum is not None}
    if not enums:
        return fn
    npos = sum(1 for arg in schema.arguments if not arg.kwarg_only)
    positions = {i: enums[a.name] for i, a in enumerate(schema.arguments[:npos]) if a.name in enums}

    def kernel(*args: Any, **kwargs: Any) -> Any:
        args = tuple(_member(v, positions[i]) if i in positions else v for i, v in enumerate(args))
        kwargs = {k: _member(v, enums[k]) if k in enums else v for k, v in kwargs.items()}
        return fn(*args, **kwargs)

    functools.update_wrapper(kernel, fn)  # dumps name the user's function, not this wrapper
    return kernel

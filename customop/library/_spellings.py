"""The spellings torch.library users write, read into customop's one spelling.

torch code passes ``tags="pointwise"`` or ``tags=torch.Tag.pointwise`` (one
tag), ``tags=None``, ``mutates_args={}`` (an empty dict, in vLLM and torchao)
and ``dispatch_key=""`` (torch's "the library's key"). The front-ends read
them here, so the Dispatcher below keeps one strict spelling: a tuple of
tag strings, a tuple of names, a key or None.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, TypeAlias

from customop.exceptions import RegistrationValueError
from customop.ops import OpOverload, OpOverloadPacket
from customop.schema import FunctionSchema, MutatesArgs, VarType, is_torch_tag, tag_name

__all__ = [
    "TagsLike",
    "op_name_text",
    "read_mutates_args",
    "read_tags",
    "refuse_type_variables",
    "tag_name",
]

#: A tag, or several: a str, a ``torch.Tag`` (read by its name), or an iterable of them.
TagsLike: TypeAlias = Any


def op_name_text(op: object) -> object:
    """An op object torch code passes where a name goes, as its name text.

    ``Library.impl(torch.ops.ns.f.default, ...)`` and the same with a customop
    `OpOverload` or packet; a str (or anything else, for the caller to refuse)
    comes back as given.
    """
    if isinstance(op, OpOverload | OpOverloadPacket):
        return str(op.name)
    torch_ops = sys.modules.get("torch._ops")  # a torch op exists only once torch is imported
    if torch_ops is not None and isinstance(op, torch_ops.OpOverload):
        return str(op.name())
    if torch_ops is not None and isinstance(op, torch_ops.OpOverloadPacket):
        return str(op._qualified_op_name)
    return op


def read_tags(tags: TagsLike) -> tuple[Any, ...]:
    """``tags`` as a tuple: ``None`` is none, one str or ``torch.Tag`` is one tag.

    Values that are not tags stay as they are, for the Dispatcher to refuse
    with its own message.
    """
    if tags is None:
        return ()
    if isinstance(tags, str) or is_torch_tag(tags):
        return (tag_name(tags),)
    if not isinstance(tags, Iterable):
        return (tags,)
    return tuple(tag_name(tag) for tag in tags)


def read_mutates_args(value: object) -> object:
    """Any collection of names (a list, set, ``{}``) as a tuple; strings and others unchanged."""
    if isinstance(value, str | MutatesArgs) or not isinstance(value, Iterable):
        return value  # the caller's validation explains what is wrong with it
    return tuple(value)


def _type_variables(tp: object) -> Iterable[VarType]:
    if isinstance(tp, VarType):
        yield tp
    for name in ("elem", "key", "value"):
        inner = getattr(tp, name, None)
        if inner is not None:
            yield from _type_variables(inner)
    for inner in getattr(tp, "elems", ()):
        yield from _type_variables(inner)


def refuse_type_variables(schema: FunctionSchema, api: str) -> None:
    """An op's schema names no type variable: torch's ``define`` reads one as a typo.

    The schema grammar lets builtins use type variables (``t``); torch.library
    refuses them in an op it defines ("unknown type specifier"), and so does
    customop's ``define``: a lower-case unknown name there is a misspelt type.
    """
    types = [*(a.type for a in schema.arguments), *(r.type for r in schema.returns)]
    for tp in types:
        for var in _type_variables(tp):
            raise RegistrationValueError(
                f"{api}: {str(schema.name)!r} uses the type {var.name!r}, an unknown type "
                f"specifier {var.name!r}. An op's arguments and returns have concrete "
                "types (type variables are for torch's builtins). Use a schema type such "
                "as Tensor, int, float, bool, str, Scalar or ScalarType."
            )

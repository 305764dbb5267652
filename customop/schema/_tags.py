"""The aliasing tags: ``inplace`` and ``out`` (torch's ``Tag.inplace`` and ``Tag.out``).

Two of torch's operator tags say how an op's returns alias its arguments:

* ``inplace``: the op mutates its first positional argument, a ``Tensor(a!)``,
  and returns it (``-> Tensor(a!)``), as ``aten::add_.Tensor`` does;
* ``out``: the op writes keyword-only ``Tensor(a!)`` arguments and returns
  them, in order, as ``aten::add.out`` does.

They exclude each other. This module reads tags in either spelling (a str or a
``torch.Tag``, by its name, without importing torch) and checks an explicit
schema against the tag's rules, with torch's messages (``Library.define`` in
torch 2.13: ``_validate_inplace_schema`` / ``_validate_out_schema``) inside
customop's four-part ones. What inference does with the tags is in
`customop.schema._infer_tags`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal, TypeAlias

from customop.exceptions import ExclusiveTagsError, SchemaError
from customop.schema._model import Argument, FunctionSchema, Return
from customop.schema._types import BaseType

__all__ = [
    "INPLACE",
    "OUT",
    "AliasingTag",
    "aliasing_tag",
    "check_tagged_schema",
    "is_torch_tag",
    "plain_tensor",
    "tag_name",
    "torch_spelling",
]

#: The tag of an op that mutates and returns its first argument.
INPLACE: Final = "inplace"
#: The tag of an op that writes and returns its keyword-only ``out`` arguments.
OUT: Final = "out"

AliasingTag: TypeAlias = Literal["inplace", "out"]


def is_torch_tag(value: object) -> bool:
    """Whether ``value`` is a ``torch.Tag`` member (by type name: torch is never imported)."""
    kind = type(value)
    return kind.__name__ == "Tag" and kind.__module__.partition(".")[0] == "torch"


def tag_name(value: object) -> object:
    """A ``torch.Tag`` as its name (``torch.Tag.pointwise`` -> ``"pointwise"``); others as given."""
    return value.name if is_torch_tag(value) else value  # type: ignore[attr-defined]


def torch_spelling(tag: AliasingTag) -> str:
    """``"torch.Tag.inplace"``: how torch code and torch's messages name the tag."""
    return f"torch.Tag.{tag}"


def aliasing_tag(tags: Iterable[object], api: str) -> AliasingTag | None:
    """``"inplace"``, ``"out"`` or None: which aliasing tag ``tags`` holds.

    Raises:
        ExclusiveTagsError: both are there (a `SchemaError`, and an
            ``AssertionError`` as torch raises).
    """
    names = {tag_name(tag) for tag in tags}
    if INPLACE in names and OUT in names:
        raise ExclusiveTagsError(
            f"{api}: the tags hold both inplace and out (torch.Tag.inplace and torch.Tag.out are "
            "mutually exclusive). An in-place op returns its first argument, an out= op its "
            "keyword-only outputs; no op does both. Keep the one tag that describes the op."
        )
    if INPLACE in names:
        return INPLACE
    return OUT if OUT in names else None


def plain_tensor(argument: Argument) -> bool:
    """Whether the argument is a single ``Tensor`` (not optional, not a list)."""
    kind = argument.type
    return type(kind) is BaseType and kind.name == "Tensor"


def _writes(argument: Argument) -> bool:
    return argument.is_write  # a ! anywhere: Tensor(a!), Tensor(a!)[], Tensor(a!)?


_WHY: Final = {
    INPLACE: "An in-place op must mutate its first positional argument and return exactly it",
    OUT: "An out= op must write keyword-only Tensor(a!) arguments and return them, in order",
}
_FIX: Final = {
    INPLACE: "Write it as '(Tensor(a!) self, ...) -> Tensor(a!)'",
    OUT: "Write it as '(Tensor x, *, Tensor(a!) out) -> Tensor(a!)'",
}


def check_tagged_schema(schema: FunctionSchema, tag: AliasingTag | None, api: str) -> None:
    """Refuse a schema that breaks the rules of its aliasing tag (none: nothing to check).

    Raises:
        SchemaError: naming the rule, in torch's words (``Schema tagged with
            torch.Tag.inplace must ...``).
    """
    if tag is None:
        return
    problem = _inplace_problem(schema) if tag == INPLACE else _out_problem(schema)
    if problem is not None:
        raise SchemaError(
            f"{api}: schema {str(schema)!r}: Schema tagged with {torch_spelling(tag)} "
            f"{problem}. {_WHY[tag]}. {_FIX[tag]}."
        )


def _inplace_problem(schema: FunctionSchema) -> str | None:
    arguments, returns = schema.arguments, schema.returns
    if not arguments or arguments[0].kwarg_only:
        return "must have at least one positional argument"
    first = arguments[0]
    if not _writes(first):
        return f"requires the first positional argument to be mutable, not {first.type}"
    if not plain_tensor(first):
        return f"requires the first positional argument to be a Tensor, not {first.type}"
    if len(returns) != 1:
        return f"must return exactly one value (the first argument), not {len(returns)}"
    problem = _return_problem(returns[0], first)
    if problem is not None:
        return f"must return the first mutable argument ({problem})"
    others = [arg.name for arg in arguments[1:] if _writes(arg)]
    if others:
        return f"must only mutate the first positional argument; {others} are mutable too"
    return None


def _return_problem(ret: Return, first: Argument) -> str | None:
    kind, ret_alias, arg_alias = ret.type, ret.alias_info, first.alias_info
    if type(kind) is not BaseType or kind.name != "Tensor":
        return f"return must be a Tensor, not {kind}"
    if ret_alias is None:
        return "return must alias the first argument"
    if not ret_alias.is_write:
        return "return must be a mutable alias, e.g. Tensor(a!)"
    if arg_alias is None or set(ret_alias.before) != set(arg_alias.before):
        return f"return aliases {set(ret_alias.before)}, the first argument does not"
    return None


def _out_problem(schema: FunctionSchema) -> str | None:
    mutable = [arg for arg in schema.arguments if _writes(arg)]
    if not mutable:
        return "must have at least one mutable argument"
    positional = [arg.name for arg in mutable if not arg.kwarg_only]
    if positional:
        return (
            "requires all mutable arguments to be keyword-only (after the *); "
            f"{positional} are positional"
        )
    others = [arg.name for arg in mutable if not plain_tensor(arg)]
    if others:
        return f"only supports Tensor mutable arguments; {others} are not one Tensor"
    returns = schema.returns
    if len(returns) != len(mutable):
        return (
            f"must return all mutable arguments ({len(mutable)} mutable arguments, "
            f"{len(returns)} returns)"
        )
    for index, (ret, arg) in enumerate(zip(returns, mutable, strict=True)):
        ret_alias, arg_alias = ret.alias_info, arg.alias_info
        if ret_alias is None or not ret_alias.is_write:
            return f"must return a mutable alias (e.g. Tensor(a!)) of arg {arg.name!r} ({index})"
        if arg_alias is None or set(ret_alias.before) != set(arg_alias.before):
            return f"must alias mutable arg {arg.name!r} in return {index}"
    return None

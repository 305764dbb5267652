"""The JSON form of a graph, as pydantic models (used only at the JSON edge).

An argument is a plain JSON value (null, true, 3, 2.5, "text") or an object
tagged by ``kind``::

    {"kind": "ref", "node": 3}              node 3's value
    {"kind": "ref", "node": 3, "item": 1}   output 1 of node 3 (an op returning several)
    {"kind": "list", "items": [...]}        also "tuple"
    {"kind": "dict", "items": [[key, value], ...]}
    {"kind": "dtype", "name": "float32"}    also "device" ("cuda:1")
    {"kind": "sym", "expr": "2*s0 + 1"}     a symbolic size
    {"kind": "float", "value": "inf"}       "inf", "-inf" or "nan": JSON has no such numbers
    {"kind": "complex", "value": "(1+2j)"}

A graph's ``assumptions`` (``["s0 == s1"]``, made by ``customop.check`` while
tracing) are saved as condition texts beside its nodes.

Fields at their defaults are left out of the text (``exclude_defaults``), so
every tag and required field carries no default.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal, TypeAlias

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    Tag,
)

from customop.schema import clip_repr
from customop.trace._node import NodeKind

__all__ = [
    "ArgModel",
    "ComplexArg",
    "DeviceArg",
    "DictArg",
    "DtypeArg",
    "FloatArg",
    "GraphModel",
    "ListArg",
    "MetaModel",
    "NodeModel",
    "RefArg",
    "SymArg",
    "TensorMetaModel",
    "TupleArg",
]

FORMAT = "customop.graph"
VERSION = 1


# Text fields that reach printed code, pictures and messages are checked like names:
# a newline in a dtype would add a line to str(graph), and HTML to a Mermaid picture.
# Each is short; a symbolic size is integer arithmetic of bounded length, so that
# evaluating it costs bounded time and memory.
_DTYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_DEVICE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}(?::[0-9]{1,9})?")
_SYMBOLIC = re.compile(r"[A-Za-z0-9_ +\-*/%(),]{1,200}")
_COMPLEX = re.compile(r"[0-9a-z.+\-()]{1,100}")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")
_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}::[A-Za-z_][A-Za-z0-9_.]{0,199}")
_WHAT = {
    _DTYPE: "a dtype name: letters, digits and '_', like 'float32'",
    _DEVICE: "a device: a name and an optional ':index', like 'cpu' or 'cuda:1'",
    _SYMBOLIC: "a symbolic size: at most 200 characters of integer arithmetic, like '2*s0 + 1'",
    _COMPLEX: "a complex number as Python writes it, like '(1+2j)'",
    _IDENT: "an identifier of at most 200 characters",
    _OP_NAME: "an operator name like 'ns::name' or 'ns::name.overload'",
}


def _text(pattern: re.Pattern[str]) -> AfterValidator:
    def check(value: str) -> str:
        if pattern.fullmatch(value) is None:
            raise ValueError(f"{clip_repr(value, 60)} is not {_WHAT[pattern]}")
        return value

    return AfterValidator(check)


DtypeText = Annotated[str, _text(_DTYPE)]
DeviceText = Annotated[str, _text(_DEVICE)]
SymbolicText = Annotated[str, _text(_SYMBOLIC)]
Identifier = Annotated[str, _text(_IDENT)]
#: Sizes and plain integers are 64-bit, as in schemas (printing a huge one would fail).
Size = Annotated[StrictInt, Field(ge=0, lt=2**63)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # import time


class RefArg(_Model):
    kind: Literal["ref"]
    node: int = Field(ge=0)
    item: int | None = Field(default=None, ge=0)


class ListArg(_Model):
    kind: Literal["list"]
    items: list[ArgModel]


class TupleArg(_Model):
    kind: Literal["tuple"]
    items: list[ArgModel]


class DictArg(_Model):
    kind: Literal["dict"]
    items: list[tuple[ArgModel, ArgModel]]


class DtypeArg(_Model):
    kind: Literal["dtype"]
    name: DtypeText


class DeviceArg(_Model):
    kind: Literal["device"]
    name: DeviceText


class SymArg(_Model):
    kind: Literal["sym"]
    expr: SymbolicText


class FloatArg(_Model):
    kind: Literal["float"]
    value: Literal["inf", "-inf", "nan"]


class ComplexArg(_Model):
    kind: Literal["complex"]
    value: Annotated[str, _text(_COMPLEX)]


def _arg_tag(value: Any) -> str | None:
    """Which member of `ArgModel` a value is: its ``kind``, or its JSON type."""
    if isinstance(value, dict):
        kind = value.get("kind")
        return kind if isinstance(kind, str) else None
    if isinstance(value, BaseModel):
        return getattr(value, "kind", None)
    return _PLAIN_TAGS.get(type(value))


# Tags of the plain JSON values: JSON type names, apart from every object 'kind'.
_PLAIN_TAGS: Final = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
}

#: One argument value. The tag is read first (a callable discriminator), so a bad
#: value gets one error naming what an argument may be, not one per union member;
#: strict scalars keep ``1`` an int and ``1.0`` a float.
ArgModel: TypeAlias = Annotated[
    Annotated[None, Tag("null")]
    | Annotated[StrictBool, Tag("boolean")]
    | Annotated[StrictInt, Tag("integer")]
    | Annotated[StrictFloat, Tag("number")]
    | Annotated[StrictStr, Tag("string")]
    | Annotated[RefArg, Tag("ref")]
    | Annotated[ListArg, Tag("list")]
    | Annotated[TupleArg, Tag("tuple")]
    | Annotated[DictArg, Tag("dict")]
    | Annotated[DtypeArg, Tag("dtype")]
    | Annotated[DeviceArg, Tag("device")]
    | Annotated[SymArg, Tag("sym")]
    | Annotated[FloatArg, Tag("float")]
    | Annotated[ComplexArg, Tag("complex")],
    Discriminator(
        _arg_tag,
        custom_error_type="invalid_argument",
        custom_error_message=(
            "an argument is null, a boolean, a number, a string, or an object whose 'kind' is "
            "one of ref, list, tuple, dict, dtype, device, sym, float, complex"
        ),
    ),
]


class TensorMetaModel(_Model):
    """``{"shape": ["s0", 3], "dtype": "float32", "device": "cpu"}``; symbolic sizes as text."""

    shape: list[Size | SymbolicText] = Field(max_length=64)
    dtype: DtypeText
    device: DeviceText


#: A node's metadata: one tensor, a list for an op with several outputs, or none.
MetaModel: TypeAlias = TensorMetaModel | list[TensorMetaModel | None] | None


class NodeModel(_Model):
    """One node. ``target`` only on calls; an output has exactly one argument (its value)."""

    kind: NodeKind
    name: Identifier
    target: Annotated[str, _text(_OP_NAME)] | None = None
    args: list[ArgModel] = []
    kwargs: dict[Identifier, ArgModel] = {}
    meta: MetaModel = None


class GraphModel(_Model):
    """A whole graph. ``ops`` maps each op's qualified name to its schema when saved,
    so loading can tell a redefined op from the one the graph recorded."""

    format: Literal["customop.graph"]
    version: Literal[1]
    ops: dict[str, str]
    nodes: list[NodeModel]
    #: Conditions on sizes the graph was traced under (``"s0 == s1"``).
    assumptions: list[str] = Field(default_factory=list)

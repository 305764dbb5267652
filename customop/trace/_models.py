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

from typing import Annotated, Any, Final, Literal, TypeAlias

from pydantic import (
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
    name: str = Field(min_length=1)


class DeviceArg(_Model):
    kind: Literal["device"]
    name: str = Field(min_length=1)


class SymArg(_Model):
    kind: Literal["sym"]
    expr: str = Field(min_length=1)


class FloatArg(_Model):
    kind: Literal["float"]
    value: Literal["inf", "-inf", "nan"]


class ComplexArg(_Model):
    kind: Literal["complex"]
    value: str


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

    shape: list[StrictInt | Annotated[StrictStr, Field(min_length=1, pattern=r"^[^\n]*$")]]
    dtype: str = Field(min_length=1)
    device: str = Field(min_length=1)


#: A node's metadata: one tensor, a list for an op with several outputs, or none.
MetaModel: TypeAlias = TensorMetaModel | list[TensorMetaModel | None] | None


class NodeModel(_Model):
    """One node. ``target`` only on calls; an output has exactly one argument (its value)."""

    kind: NodeKind
    name: str
    target: str | None = None
    args: list[ArgModel] = []
    kwargs: dict[str, ArgModel] = {}
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

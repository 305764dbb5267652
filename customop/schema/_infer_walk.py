"""Reading one annotation as a schema type, for `infer_schema`.

An annotation is walked by ``typing.get_origin``: ``FORMS`` handles the
generic forms (lists, unions, ``Literal``, enums, tuples); every other
annotation is a leaf that the annotation registry maps to a schema base type.
The result is a `Shape`: a base type wrapped in ``?`` and ``[]``, which the
``RULES`` table accepts or rejects for an argument or a return.
"""

from __future__ import annotations

import collections.abc
import enum
import functools
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Final, NamedTuple, NoReturn

from customop.exceptions import SchemaError
from customop.schema._infer_table import RULES, UNIONS, Choices, lookup_annotation
from customop.schema._types import AliasInfo, BaseType, ListType, OptionalType, SchemaType

__all__ = ["FORMS", "Shape", "Site", "form_key", "require", "schema_type", "spell", "walk"]


_SUPPORTED = (
    "Use Tensor, int, float, bool, str, Union[int, float, bool], numpy.dtype, Device, "
    "Literal[...] or an Enum, inside Optional[...] or list[...] as needed, or map the class "
    "with customop.schema.register_annotation()"
)


# Site and Shape are NamedTuples: made per parameter on every call, and cheap to make.


class Site(NamedTuple):
    """A parameter or the return value being inferred, for error messages."""

    function: str
    subject: str  # "parameter 'x'" or "the return value"
    annotation: object
    supported: str = _SUPPORTED  # the fix for an annotation with no schema type

    def fail(self, what: str, why: str, fix: str) -> NoReturn:
        """Raise the four-part error: api, what (naming function and subject), why, fix."""
        raise SchemaError(
            f"infer_schema: {self.subject} of function {self.function!r} {what}. {why}. {fix}."
        )

    def annotated(self, part: object) -> str:
        """``is annotated X, which`` or, when ``part`` is inside X, ``..., whose part P``."""
        text = f"is annotated {self.annotation!r}"
        return f"{text}, which" if part is self.annotation else f"{text}, whose part {part!r}"


class Shape(NamedTuple):
    """An annotation read as a schema base type and the ``?`` / ``[]`` written after it."""

    base: str
    form: str = ""  # "?[]" is a list of optionals: wrappers innermost first, as printed
    leaf: object = None  # the annotation the base type came from, for defaults
    choices: Choices | None = None

    def wrap(self, token: str) -> Shape:
        return self._replace(form=self.form + token)

    @property
    def text(self) -> str:
        return self.base + self.form


def _get(table: Mapping[Any, object], key: object) -> object:
    try:
        return table.get(key)
    except TypeError:  # an unhashable annotation object is in no table
        return None


def form_key(annotation: object) -> object:
    """What an annotation is looked up by: its generic origin, Enum, or itself."""
    origin = typing.get_origin(annotation)
    if origin is not None:
        return origin
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return enum.Enum
    return annotation


def walk(annotation: object, site: Site) -> Shape:
    """The shape of ``annotation``; raises the four-part error for anything unsupported."""
    key = form_key(annotation)
    form = _get(FORMS, key)
    if form is not None:
        return typing.cast(_Form, form)(annotation, site)
    base = lookup_annotation(key)
    if base is None and hasattr(key, "__value__") and type(key).__name__ == "TypeAliasType":
        # `type Array = ...` (typing or typing_extensions), such as numpy >= 2.5's
        # NDArray: its value is what it means.
        return walk(key.__value__, site)
    if base is None:
        site.fail(
            f"{site.annotated(annotation)} has no schema type",
            "An operator schema describes tensors, numbers, strings, dtypes and devices",
            site.supported,
        )
    return Shape(base, "", key)


def _sequence(annotation: object, site: Site) -> Shape:
    elements = typing.get_args(annotation)
    if len(elements) != 1:
        site.fail(
            f"{site.annotated(annotation)} is a list without an element type",
            "A list's schema type comes from its elements",
            "Name the element type, as in list[int]",
        )
    return walk(elements[0], site).wrap("[]")


def _union(annotation: object, site: Site) -> Shape:
    members = typing.get_args(annotation)
    present = tuple(member for member in members if member is not type(None))
    if len(present) == 1:
        shape = walk(present[0], site)
    else:
        try:
            key: object = frozenset(present)
        except TypeError:  # a member that cannot be hashed is in no table
            key = None
        base = _get(UNIONS, key)
        if base is None:
            site.fail(
                f"{site.annotated(annotation)} is a Union with no schema type",
                "The schema unions are Optional[X] and the number Union[int, float, bool] only",
                "Use one of those, or separate parameters",
            )
        shape = Shape(str(base), "", annotation)
    return shape.wrap("?") if len(present) < len(members) else shape


def _literal(annotation: object, site: Site) -> Shape:
    values = typing.get_args(annotation)
    if not values:
        site.fail(
            f"{site.annotated(annotation)} is a bare Literal, with no values",
            "A Literal infers as a str argument checked against its values at call time",
            "Name the values, as in Literal['mean', 'sum']",
        )
    if not all(isinstance(value, str) for value in values):
        site.fail(
            f"{site.annotated(annotation)} has values that are not all str",
            "A Literal infers as a str argument checked against its values at call time",
            "Use string values, as in Literal['mean', 'sum']",
        )
    return Shape("str", "", str, Choices(typing.cast(tuple[str, ...], values)))


def _enum(annotation: object, site: Site) -> Shape:
    cls = typing.cast(type[enum.Enum], annotation)
    members = list(cls)
    if not members:
        site.fail(
            f"{site.annotated(annotation)} is an Enum without members",
            "An Enum infers as a str argument that must name one of its members",
            "Add members to the Enum",
        )
    values = [member.value for member in members]
    # str values (StrEnum, `class M(str, Enum)`) are what users pass; otherwise the names.
    texts = values if all(isinstance(v, str) for v in values) else [m.name for m in members]
    return Shape("str", "", str, Choices(tuple(texts), cls))


def _annotated(annotation: object, site: Site) -> Shape:
    # Annotated[T, ...] is T; its metadata is for other tools.
    args = typing.get_args(annotation)
    if not args:
        site.fail(
            f"{site.annotated(annotation)} is a bare Annotated, with no type",
            "Annotated[T, ...] stands for T, and the schema type comes from T",
            "Name the type, as in Annotated[int, ...]",
        )
    return walk(args[0], site)


def _tuple(annotation: object, site: Site) -> Shape:
    items = set(typing.get_args(annotation)) - {Ellipsis}
    kind = next(iter(items)) if len(items) == 1 else None
    # torch's phrase, for a tuple of one element type: "For example, list[int]".
    fix = (
        f"For example, list[{getattr(kind, '__name__', kind)}] instead"
        if kind is not None
        else "Use list[...] or Sequence[...] of one element type"
    )
    site.fail(
        f"{site.annotated(annotation)} is a tuple",
        "Schema arguments have no tuple type (nor have torch's), and only a whole return "
        "annotation may be a tuple",
        f"Use list[...] or Sequence[...] for an argument. {fix}",
    )


_Form = Callable[[object, Site], Shape]

#: The generic forms, by typing.get_origin (and Enum for every Enum subclass).
FORMS: Final[Mapping[object, _Form]] = types.MappingProxyType(
    {
        list: _sequence,
        collections.abc.Sequence: _sequence,
        typing.Union: _union,
        types.UnionType: _union,
        typing.Literal: _literal,
        enum.Enum: _enum,
        typing.Annotated: _annotated,
        tuple: _tuple,
    }
)


def spell(python: str, form: str) -> str:
    """A form such as ``?[]`` as a Python annotation: ``list[Optional[int]]``."""
    for token in form.replace("[]", "L"):
        python = f"Optional[{python}]" if token == "?" else f"list[{python}]"
    return python


def require(
    shape: Shape, allowed: tuple[str, ...], site: Site, why: str = "", fix: str = ""
) -> None:
    """Fail unless the shape's form is one of ``allowed`` (forms from the RULES table).

    ``why`` and ``fix`` default to the argument forms of the shape's base type.
    """
    if shape.form in allowed:
        return
    forms = ", ".join(shape.base + form for form in allowed)
    spelled = ", ".join(spell(RULES[shape.base].python, form) for form in allowed)
    site.fail(
        f"{site.annotated(site.annotation)} would be the schema type {shape.text}",
        why or f"As an argument, {shape.base} comes only as {forms}",
        fix or f"Annotate it as one of {spelled}",
    )


@functools.lru_cache(maxsize=1024)
def schema_type(base: str, form: str, alias: str | None = None) -> SchemaType:
    """The type model of ``base`` + ``form``; ``alias`` names a mutated tensor's write set."""
    # Type models are immutable, so the few distinct ones are built once and shared.
    info = None if alias is None else AliasInfo(before=(alias,), after=(alias,), is_write=True)
    result: SchemaType = BaseType(name=base, alias=info)
    for token in form.replace("[]", "L"):
        result = OptionalType(elem=result) if token == "?" else ListType(elem=result)
    return result

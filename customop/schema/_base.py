"""The frozen-model base class and the fast constructor the parser uses."""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from typing_extensions import Self

from customop.exceptions import SchemaError
from customop.schema._clip import clip_repr

__all__ = ["Frozen", "build", "to_schema_error"]

_M = TypeVar("_M", bound="Frozen")


_TYPE_TAGS = frozenset(
    {"base", "var", "class", "optional", "list", "tuple", "dict", "future", "union"}
)


def _problems(error: ValidationError) -> list[tuple[tuple[str, ...], str]]:
    """``(location, reason)`` pairs, with nested models' locations joined up.

    Models validated inside other models go through `Frozen.__init__` too
    (pydantic calls a custom ``__init__`` for nested models), so a nested
    `SchemaError` arrives here carrying its own location and reason.
    """
    problems = []
    for item in error.errors(include_url=False):
        # Drop the union tags pydantic puts in paths ("type.base.name" -> "type.name").
        loc = tuple(str(part) for part in item["loc"] if part not in _TYPE_TAGS)
        cause = item.get("ctx", {}).get("error")
        if isinstance(cause, SchemaError):
            problems.append((loc + cause.loc, cause.reason or str(cause)))
        else:
            problems.append((loc, f"{clip_repr(item['input'])} is invalid: {item['msg']}"))
    return problems


def to_schema_error(error: ValidationError, model: str) -> SchemaError:
    problems = _problems(error)
    text = "; ".join(f"{'.'.join(loc)}: {reason}" if loc else reason for loc, reason in problems)
    converted = SchemaError(f"{model}: {text}")
    converted.loc, converted.reason = problems[0] if len(problems) == 1 else ((), text)
    return converted


class Frozen(BaseModel):
    """A frozen, hashable pydantic model whose validation errors are `SchemaError`s.

    Validators raise `SchemaError` with a message naming the field and value;
    pydantic wraps them into a `ValidationError`, which `__init__` and the
    `model_validate*` class methods turn back into one `SchemaError`.
    """

    # defer_build: pydantic compiles validators on first use, not at import;
    # the parser never validates (it builds checked values directly).
    model_config = ConfigDict(frozen=True, extra="forbid", strict=False, defer_build=True)

    _fields_set: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise to_schema_error(error, type(self).__name__) from None

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        try:
            return super().model_validate(obj, **kwargs)
        except ValidationError as error:
            raise to_schema_error(error, cls.__name__) from None

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **kwargs: Any) -> Self:
        try:
            return super().model_validate_json(json_data, **kwargs)
        except ValidationError as error:
            raise to_schema_error(error, cls.__name__) from None

    # `build` gives every instance of a class one shared frozenset of field names
    # (one object less per instance for gc to visit, issue #12); a copy gets a set
    # of its own, which ``model_copy(update=...)`` updates in place.
    def __copy__(self) -> Self:
        copied = super().__copy__()
        _set_fields(copied, set(self.__pydantic_fields_set__))
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        copied = super().__deepcopy__(memo)
        _set_fields(copied, set(self.__pydantic_fields_set__))
        return copied

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._fields_set = frozenset(cls.model_fields)


_new = object.__new__
_set = object.__setattr__
_slots = BaseModel.__dict__
_set_fields = _slots["__pydantic_fields_set__"].__set__
_set_extra = _slots["__pydantic_extra__"].__set__
_set_private = _slots["__pydantic_private__"].__set__


def build(cls: type[_M], values: dict[str, Any]) -> _M:
    """Make an instance from already-checked values, skipping validation.

    The parser checks every invariant itself (with better error positions than
    a validator could give), so it builds models this way: about 4x cheaper
    than ``model_construct``. ``values`` must name every field.
    """
    obj = _new(cls)
    _set(obj, "__dict__", values)
    _set_fields(obj, cls._fields_set)  # shared and frozen: see `Frozen.__copy__`
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj

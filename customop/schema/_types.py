"""The schema type model: alias annotations and the types an argument can have.

Each type is a frozen model with a ``kind`` discriminator so that JSON round
trips pick the right class. ``str(t)`` prints the type as torch prints it.
Alias annotations live on the node they were written on (``Tensor(a)[]`` puts
the alias on the element, ``t[](a!)`` on the list), so printing is a plain
walk of the tree.

The concrete types are final: hot paths test them with ``type(t) is X``,
since ``isinstance`` on a pydantic model class goes through its ABCMeta hook.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, final

from pydantic import Field, ValidationInfo, field_validator, model_validator

from customop.exceptions import SchemaError
from customop.schema._base import Frozen
from customop.schema._type_names import (
    BASE_TYPE_NAMES,
    CANONICAL_NAMES,
    WILDCARD,
    is_identifier,
    suggest_type_name,
    type_name_problem,
)

__all__ = [
    "BASE_TYPE_NAMES",
    "CANONICAL_NAMES",
    "AliasInfo",
    "BaseType",
    "ClassType",
    "DictType",
    "FutureType",
    "ListType",
    "OptionalType",
    "SchemaType",
    "TupleType",
    "UnionType",
    "VarType",
    "is_identifier",
    "suggest_type_name",
]


class AliasInfo(Frozen):
    """An alias annotation: ``(a)``, ``(a!)``, ``(a -> *)``, ``(a|b)``, ``(*)``, bare ``!``.

    ``before`` and ``after`` are alias sets, kept in the order written so that
    printing gives the text back; equality and hashing treat them as sets.
    Without ``->`` the after set equals the before set. The bare ``!``
    shorthand (``Tensor!``) is a write to a fresh, unnamed set: both sets empty.
    """

    before: tuple[str, ...]
    after: tuple[str, ...]
    is_write: bool = False

    @field_validator("before", "after")
    @classmethod
    def _check_sets(cls, sets: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        if info.field_name == "after" and info.data.get("before", sets) == sets:
            return sets  # a copy of the before set (or it failed): reported once, there
        for name in sets:
            if name != WILDCARD and not is_identifier(name):
                raise SchemaError(
                    f"alias set {name!r} is not an identifier or '*'. "
                    "Alias sets are written like (a), (a!) or (a -> *)."
                )
        return sets

    @model_validator(mode="wrap")
    @classmethod
    def _default_after(cls, data: Any, handler: Any) -> Any:
        # Without '->' the after set is the before set, as in torch's parser.
        if isinstance(data, dict) and "after" not in data and "before" in data:
            data = {**data, "after": tuple(data["before"])}
        return handler(data)

    @model_validator(mode="after")
    def _check_bare(self) -> AliasInfo:
        if not self.before and (self.after or not self.is_write):
            raise SchemaError(
                f"before set is empty but after={self.after!r}, "
                f"is_write={self.is_write!r}. Only the bare write shorthand '!' has no "
                "named set; name the set, e.g. (a!)."
            )
        return self

    @property
    def before_set(self) -> frozenset[str]:
        """The before set as a set (torch's ``AliasInfo.before_set``)."""
        return frozenset(self.before)

    @property
    def after_set(self) -> frozenset[str]:
        """The after set as a set (torch's ``AliasInfo.after_set``)."""
        return frozenset(self.after)

    @property
    def is_wildcard(self) -> bool:
        """Whether the annotation uses the ``*`` wildcard set (may alias anything)."""
        return WILDCARD in self.before or WILDCARD in self.after

    def _key(self) -> tuple[frozenset[str], frozenset[str], bool, bool]:
        return frozenset(self.before), frozenset(self.after), self.is_write, not self.before

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AliasInfo) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        if not self.before:
            return "!"
        text = "(" + "|".join(self.before) + ("!" if self.is_write else "")
        if set(self.after) != set(self.before):
            text += " -> " + "|".join(self.after)
        return text + ")"


def _alias_text(alias: AliasInfo | None) -> str:
    return "" if alias is None else str(alias)


class _Type(Frozen):
    """Printing shared by every type: ``str(t)`` is the canonical spelling."""

    def format(self, style: str = "canonical") -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.format()


@final
class BaseType(_Type):
    """A named base type: ``Tensor``, ``int``, ``SymInt``, ``ScalarType``, ..."""

    kind: Literal["base"] = "base"
    name: str
    alias: AliasInfo | None = None

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if name not in BASE_TYPE_NAMES:
            hint = suggest_type_name(name)
            help_text = f"Did you mean {hint!r}?" if hint else "Use a type of the schema grammar."
            raise SchemaError(f"unknown type name {name!r}. {help_text}")
        return name

    def format(self, style: str = "canonical") -> str:
        """Print this type in a schema's spelling.

        Args:
            style: ``"canonical"`` for torch's printed form, ``"source"`` for the
                spelling ``native_functions.yaml`` uses.

        Returns:
            The type's text.
        """
        name = self.name if style == "source" else CANONICAL_NAMES.get(self.name, self.name)
        return name + _alias_text(self.alias)


@final
class VarType(_Type):
    """A type variable such as ``t`` or ``tVal`` (any lower-case unknown name)."""

    kind: Literal["var"] = "var"
    name: str
    alias: AliasInfo | None = None

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if not is_identifier(name) or not name[0].islower() or name in BASE_TYPE_NAMES:
            raise SchemaError(
                f"{name!r} is not a type variable name. "
                "Type variables are lower-case identifiers that are not type names, like 't'."
            )
        problem = type_name_problem(name)
        if problem is not None:  # a habit like `double`: the parser rejects it too
            raise SchemaError(f"{name!r} is not a type variable name: {problem}")
        return name

    def format(self, style: str = "canonical") -> str:
        """Print this type in a schema's spelling.

        Args:
            style: ``"canonical"`` for torch's printed form, ``"source"`` for the
                spelling ``native_functions.yaml`` uses.

        Returns:
            The type's text.
        """
        return self.name + _alias_text(self.alias)


@final
class ClassType(_Type):
    """A TorchScript class, ``__torch__.torch.classes.ns.Name``."""

    kind: Literal["class"] = "class"
    qualified_name: str

    @field_validator("qualified_name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        parts = name.split(".")
        if parts[0] != "__torch__" or len(parts) < 2 or not all(map(is_identifier, parts)):
            raise SchemaError(
                f"{name!r} is not a qualified class name. "
                "Write it as __torch__.torch.classes.<ns>.<Name>."
            )
        return name

    def format(self, style: str = "canonical") -> str:
        """Print this type in a schema's spelling.

        Args:
            style: ``"canonical"`` for torch's printed form, ``"source"`` for the
                spelling ``native_functions.yaml`` uses.

        Returns:
            The type's text.
        """
        return self.qualified_name


@final
class OptionalType(_Type):
    """``T?``."""

    kind: Literal["optional"] = "optional"
    elem: SchemaType

    def format(self, style: str = "canonical") -> str:
        """Print this type in a schema's spelling.

        Args:
            style: ``"canonical"`` for torch's printed form, ``"source"`` for the
                spelling ``native_functions.yaml`` uses.

        Returns:
            The type's text.
        """
        return self.elem.format(style) + "?"


@final
class ListType(_Type):
    """``T[]``, or ``T[N]`` with a fixed size."""

    kind: Literal["list"] = "list"
    elem: SchemaType
    size: int | None = None
    alias: AliasInfo | None = None

    @field_validator("size")
    @classmethod
    def _check_size(cls, size: int | None) -> int | None:
        if size is not None and size < 0:
            raise SchemaError(f"size {size!r} is negative. Write T[N] with N >= 0.")
        return size

    def format(self, style: str = "canonical") -> str:
        """Print this type in a schema's spelling.

        Args:
            style: ``"canonical"`` for torch's printed form, ``"source"`` for the
                spelling ``native_functions.yaml`` uses.

        Returns:
            The type's text.
        """
        size = "" if self.size is None else str(self.size)
        return f"{self.elem.format(style)}[{size}]" + _alias_text(self.alias)


@final
class TupleType(_Type):
    """``(A, B, ...)``."""

    kind: Literal["tuple"] = "tuple"
    elems: tuple[SchemaType, ...]

    def format(self, style: str = "canonical") -> str:
        """Print this type in a schema's spelling.

        Args:
            style: ``"canonical"`` for torch's printed form, ``"source"`` for the
                spelling ``native_functions.yaml`` uses.

        Returns:
            The type's text.
        """
        return "(" + ", ".join(e.format(style) for e in self.elems) + ")"


@final
class DictType(_Type):
    """``Dict(K, V)``."""

    kind: Literal["dict"] = "dict"
    key: SchemaType
    value: SchemaType
    alias: AliasInfo | None = None

    def format(self, style: str = "canonical") -> str:
        """Print this type in a schema's spelling.

        Args:
            style: ``"canonical"`` for torch's printed form, ``"source"`` for the
                spelling ``native_functions.yaml`` uses.

        Returns:
            The type's text.
        """
        body = f"Dict({self.key.format(style)}, {self.value.format(style)})"
        return body + _alias_text(self.alias)


@final
class FutureType(_Type):
    """A one-parameter wrapper: ``Future(T)``, ``Await(T)`` or ``RRef(T)``."""

    kind: Literal["future"] = "future"
    wrapper: Literal["Future", "Await", "RRef"] = "Future"
    elem: SchemaType

    def format(self, style: str = "canonical") -> str:
        """Print this type in a schema's spelling.

        Args:
            style: ``"canonical"`` for torch's printed form, ``"source"`` for the
                spelling ``native_functions.yaml`` uses.

        Returns:
            The type's text.
        """
        return f"{self.wrapper}({self.elem.format(style)})"


@final
class UnionType(_Type):
    """``Union(A, B, ...)``."""

    kind: Literal["union"] = "union"
    elems: tuple[SchemaType, ...]
    alias: AliasInfo | None = None

    @field_validator("elems")
    @classmethod
    def _check_elems(cls, elems: tuple[Any, ...]) -> tuple[Any, ...]:
        if len(elems) < 2:
            raise SchemaError(f"elems has {len(elems)} member(s). A Union needs at least two.")
        return elems

    def format(self, style: str = "canonical") -> str:
        """Print this type in a schema's spelling.

        Args:
            style: ``"canonical"`` for torch's printed form, ``"source"`` for the
                spelling ``native_functions.yaml`` uses.

        Returns:
            The type's text.
        """
        body = "Union(" + ", ".join(e.format(style) for e in self.elems) + ")"
        return body + _alias_text(self.alias)


SchemaType = Annotated[
    BaseType
    | VarType
    | ClassType
    | OptionalType
    | ListType
    | TupleType
    | DictType
    | FutureType
    | UnionType,
    Field(discriminator="kind"),
]

"""OperatorName, Argument, Return and FunctionSchema: frozen, validated models."""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator, model_validator

from customop.exceptions import SchemaError
from customop.schema._base import Frozen
from customop.schema._defaults import (
    Default,
    coerce_default,
    format_default,
    require_default_fits,
)
from customop.schema._printer import PrintStyle, format_schema
from customop.schema._types import (
    AliasInfo,
    BaseType,
    ListType,
    OptionalType,
    SchemaType,
    is_identifier,
)

__all__ = [
    "Argument",
    "FunctionSchema",
    "OperatorName",
    "Return",
    "TensorKind",
    "check_overload_name",
    "tensor_kind",
]

#: How an argument carries tensors, for computing dispatch keys.
TensorKind = Literal["tensor", "optional", "list", "optional_list"]


def check_overload_name(overload: str) -> str | None:
    """Why ``overload`` is not a legal overload name, or None."""
    if overload == "default":
        return "'default' names the overload-less op (ns::name) and cannot be an overload name"
    if overload.startswith("__"):
        return "overload names starting with '__' are reserved for Python attributes"
    if overload and not is_identifier(overload):
        return "an overload name must be an identifier"
    return None


class OperatorName(Frozen):
    """``ns::name.overload``.

    ``namespace`` is empty for custom-class methods; ``overload`` for the default overload.
    """

    namespace: str = ""
    name: str
    overload: str = ""

    @field_validator("namespace")
    @classmethod
    def _check_namespace(cls, ns: str) -> str:
        if ns and not is_identifier(ns):
            raise SchemaError(
                f"namespace {ns!r} is not an identifier. "
                "Use letters, digits and underscores, like 'mylib'."
            )
        return ns

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if not is_identifier(name):
            raise SchemaError(
                f"name {name!r} is not an identifier. "
                "Use letters, digits and underscores, like 'my_op'."
            )
        return name

    @field_validator("overload")
    @classmethod
    def _check_overload(cls, overload: str) -> str:
        problem = check_overload_name(overload)
        if problem:
            raise SchemaError(f"overload {overload!r} is illegal: {problem}.")
        return overload

    @property
    def qualified_name(self) -> str:
        """``ns::name`` (no overload)."""
        return f"{self.namespace}::{self.name}" if self.namespace else self.name

    def __str__(self) -> str:
        base = self.qualified_name
        return f"{base}.{self.overload}" if self.overload else base


def tensor_kind(tp: SchemaType) -> TensorKind | None:
    """Whether, and how, an argument of type ``tp`` carries tensors."""
    # Exact type tests: isinstance on a pydantic model class goes through its
    # ABCMeta hook (~0.3 µs), and this runs for every argument of every def.
    optional = type(tp) is OptionalType
    inner = tp.elem if optional else tp  # type: ignore[union-attr]
    if type(inner) is BaseType:
        return ("optional" if optional else "tensor") if inner.name == "Tensor" else None
    if type(inner) is ListType:
        elem = inner.elem
        elem_optional = type(elem) is OptionalType
        if elem_optional:
            elem = elem.elem  # type: ignore[union-attr]
        if type(elem) is BaseType and elem.name == "Tensor":
            return "optional_list" if elem_optional or optional else "list"
    return None


def _outer_alias(tp: SchemaType) -> AliasInfo | None:
    inner = tp.elem if type(tp) is OptionalType else tp
    # Fields live in __dict__; getattr on a type without the field would go
    # through pydantic's __getattr__ and an AttributeError (slow).
    alias: AliasInfo | None = inner.__dict__.get("alias")
    return alias


def _writes(tp: SchemaType) -> bool:
    """Whether a ``!`` appears anywhere in ``tp``."""
    fields = tp.__dict__
    alias = fields.get("alias")
    if alias is not None and alias.is_write:
        return True
    children = [fields[name] for name in ("elem", "key", "value") if name in fields]
    return any(_writes(child) for child in (*children, *fields.get("elems", ())))


class Argument(Frozen):
    """One argument: type, name, optional default, and whether it is keyword-only."""

    name: str
    type: SchemaType
    default: Default | None = None
    kwarg_only: bool = False

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if not is_identifier(name):
            raise SchemaError(
                f"name {name!r} is not an identifier. "
                "Argument names use letters, digits and underscores."
            )
        return name

    @model_validator(mode="after")
    def _check_default(self) -> Argument:
        default = self.default
        if default is not None:
            value = coerce_default(default.value, self.type)
            require_default_fits(value, self.type, f"argument {self.name!r}")
            if value is not default.value:
                # As the parser does: `float x=1` holds 1.0 (frozen, hence the setattr).
                object.__setattr__(self, "default", Default(value=value, spelling=default.spelling))
        return self

    @property
    def alias_info(self) -> AliasInfo | None:
        """The alias annotation on the argument's outer type (under any ``?``)."""
        return _outer_alias(self.type)

    @property
    def is_write(self) -> bool:
        """True when the op may mutate this argument (a ``!`` anywhere in its type)."""
        return _writes(self.type)

    @property
    def tensor_kind(self) -> TensorKind | None:
        """How the argument carries tensors (``Tensor``, ``Tensor[]``, ...), else ``None``."""
        return tensor_kind(self.type)

    def format(self, style: PrintStyle = "canonical") -> str:
        """Print this argument (type, name, default) in a schema's spelling.

        Args:
            style: ``"canonical"`` for torch's printed form, ``"source"`` for the
                spelling ``native_functions.yaml`` uses.

        Returns:
            The argument's text, e.g. ``int dim=-1``.
        """
        text = f"{self.type.format(style)} {self.name}"
        if self.default is None:
            return text
        if style == "source":
            return f"{text}={self.default.spelling}"
        return f"{text}={format_default(self.default, self.type)}"

    def __str__(self) -> str:
        return self.format()


class Return(Frozen):
    """One return value: a type and an optional name."""

    name: str | None = None
    type: SchemaType

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str | None) -> str | None:
        if name is not None and not is_identifier(name):
            raise SchemaError(f"name {name!r} is not an identifier.")
        return name

    @property
    def alias_info(self) -> AliasInfo | None:
        """The return's outer alias annotation (``Tensor(a)``), or ``None``."""
        return _outer_alias(self.type)

    def __str__(self) -> str:
        return f"{self.type} {self.name}" if self.name else str(self.type)


def check_arguments(arguments: tuple[Argument, ...]) -> str | None:
    """Why the argument list breaks an invariant, or None."""
    seen: set[str] = set()
    kwarg_only = False
    for arg in arguments:
        if arg.name in seen:
            return f"argument name {arg.name!r} appears twice; argument names must be unique"
        seen.add(arg.name)
        if kwarg_only and not arg.kwarg_only:
            return (
                f"positional argument {arg.name!r} follows a keyword-only one; "
                "keyword-only arguments come after '*'"
            )
        kwarg_only = arg.kwarg_only
    return None


class FunctionSchema(Frozen):
    """An operator's signature: ``ns::name.overload(args) -> returns``.

    ``name`` is None for an anonymous schema such as ``(Tensor x) -> Tensor``
    (what `infer_schema` gives without ``op_name``).
    """

    name: OperatorName | None = None
    arguments: tuple[Argument, ...] = ()
    returns: tuple[Return, ...] = ()
    is_vararg: bool = False
    is_varret: bool = False

    @model_validator(mode="after")
    def _check(self) -> FunctionSchema:
        problem = check_arguments(self.arguments)
        if problem:
            raise SchemaError(f"{problem}.")
        return self

    @property
    def namespace(self) -> str:
        """The operator's namespace (``"ns"`` of ``ns::name``); ``""`` if the schema has no name."""
        return self.name.namespace if self.name else ""

    @property
    def overload_name(self) -> str:
        """The overload name (``"out"`` of ``ns::name.out``), or ``""`` for the default overload."""
        return self.name.overload if self.name else ""

    @property
    def is_mutable(self) -> bool:
        """True when some argument is annotated as written (``Tensor(a!)``)."""
        return any(arg.is_write for arg in self.arguments)

    @property
    def mutated_arguments(self) -> tuple[str, ...]:
        """Names of the arguments the op writes to (alias annotations with ``!``), in order."""
        return tuple(arg.name for arg in self.arguments if arg.is_write)

    @property
    def positional_arguments(self) -> tuple[Argument, ...]:
        """The arguments that may be passed by position (those before ``*``)."""
        return tuple(arg for arg in self.arguments if not arg.kwarg_only)

    @property
    def kwarg_only_arguments(self) -> tuple[Argument, ...]:
        """The keyword-only arguments (those after ``*``)."""
        return tuple(arg for arg in self.arguments if arg.kwarg_only)

    @property
    def tensor_argument_positions(self) -> tuple[tuple[int, TensorKind], ...]:
        """``(index, kind)`` of every argument that carries tensors, in order."""
        positions = []
        for index, arg in enumerate(self.arguments):
            kind = tensor_kind(arg.type)
            if kind is not None:
                positions.append((index, kind))
        return tuple(positions)

    def format(self, style: PrintStyle = "canonical") -> str:
        """Print the schema: ``canonical`` is torch's C++ spelling, ``source`` keeps
        each default as written (``reduction=Mean``, ``eps=1e-05``), as torchgen does.

        Args:
            style: ``"canonical"`` or ``"source"``.

        Returns:
            The schema's text; `parse_schema` reads it back to an equal schema.
        """
        return format_schema(self, style)

    def __radd__(self, other: object) -> str:
        """``"ns::op" + schema``: text, as torch's ``op_name + infer_schema(fn, ...)`` gives.

        vLLM and torchao build schemas this way; the result is torch's text
        (the ``source`` style) and ``Library.define`` accepts it.
        """
        if not isinstance(other, str):
            return NotImplemented
        return other + self.format("source")

    def __format__(self, spec: str) -> str:
        return self.format("source" if spec == "source" else "canonical") if spec else str(self)

    def __str__(self) -> str:
        return format_schema(self, "canonical")

"""What the interpreter needs of an op's schema, worked out once per schema.

Where the tensors are (and of which kind), how to fill in defaults, which
arguments are written, and what each return is: read per call from a
`Plan`, never by walking the schema again.
"""

from __future__ import annotations

from typing import Any, Final, final

from customop.schema import FunctionSchema, TensorKind, tensor_kind

__all__ = ["LIST_KINDS", "Plan", "plan_of", "rule_arguments"]

#: Tensor kinds whose value is a list of tensors.
LIST_KINDS: Final = frozenset({"list", "optional_list"})
_NO_DEFAULT: Final = object()


def _default(arg: Any) -> Any:
    return None if arg.default is None else arg.default.value


@final
class Plan:
    """One schema, read for batching: positions, defaults, writes and returns."""

    __slots__ = (
        "kwonly",
        "mutable",
        "mutated",
        "name",
        "npos",
        "positional",
        "returns",
        "schema",
        "tensors",
    )

    def __init__(self, schema: FunctionSchema) -> None:
        self.schema = schema
        self.name = str(schema.name)
        positional = schema.positional_arguments
        self.npos = len(positional)
        #: (name, default) of each positional argument.
        self.positional = tuple((arg.name, _default(arg)) for arg in positional)
        #: (name, default) of each keyword-only argument.
        self.kwonly = tuple((arg.name, _default(arg)) for arg in schema.kwarg_only_arguments)
        #: (index, kind) of the positional tensor arguments (keyword-only ones are refused).
        self.tensors: tuple[tuple[int, TensorKind], ...] = tuple(
            (index, kind) for index, kind in schema.tensor_argument_positions if index < self.npos
        )
        self.mutated = tuple(i for i, arg in enumerate(positional) if arg.is_write)
        self.mutable = schema.is_mutable
        #: The kind of each return: a tensor kind, or None for other types.
        self.returns: tuple[TensorKind | None, ...] = tuple(
            tensor_kind(ret.type) for ret in schema.returns
        )

    def bind(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[list[Any], dict[str, Any]]:
        """The positional arguments (defaults filled in) and the keyword-only ones."""
        if not kwargs and len(args) == self.npos:
            return list(args), {}
        values = list(args[: self.npos])
        for name, default in self.positional[len(values) :]:
            values.append(kwargs.get(name, default))
        keywords = {name: kwargs.get(name, default) for name, default in self.kwonly}
        return values, keywords


_PLANS: dict[int, Plan] = {}
_CAP: Final = 1024


def plan_of(schema: FunctionSchema) -> Plan:
    """The `Plan` of ``schema`` (memoized by identity; schemas are immutable)."""
    found = _PLANS.get(id(schema))
    if found is None or found.schema is not schema:
        if len(_PLANS) >= _CAP:
            _PLANS.clear()  # schemas of ops long gone: start over rather than grow
        found = _PLANS[id(schema)] = Plan(schema)
    return found


def rule_arguments(
    schema: FunctionSchema, in_dims: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], list[Any], dict[str, Any]]:
    """A call as customop passes it to a rule: every positional argument (defaults filled
    in, their in_dims None) and every keyword-only one. For adapters whose system leaves
    out arguments at their defaults (torch does)."""
    values, keywords = plan_of(schema).bind(args, kwargs)
    dims = (*in_dims, *([None] * (len(values) - len(in_dims))))
    return dims, values, keywords

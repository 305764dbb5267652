"""What the interpreter needs of an op's schema, worked out once per rule.

Where the tensors are (and of which kind), how to fill in defaults, which
arguments are written, and what each return is: read per call from a
`Plan`. An op's `VmapRule` holds the plan of the schema it was registered
for (op facts live on the op's entry, not in a table beside it), so a call
batched through a rule never walks the schema; an op without a rule (the
loop fallback, far slower than a walk) gets a plan per call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, final

from customop.schema import FunctionSchema, TensorKind, tensor_kind

if TYPE_CHECKING:
    from customop.vmap._rule import VmapRule

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


def plan_of(schema: FunctionSchema, held: Plan | None = None) -> Plan:
    """The `Plan` of ``schema``: ``held`` when it was made for this schema object.

    An op's rule holds the plan of the schema it was registered for (made once,
    with the rule), so the calls that batch through a rule never work it out
    again; anything else gets a new one.
    """
    if held is not None and held.schema is schema:
        return held
    return Plan(schema)


def rule_arguments(
    rule: VmapRule,
    schema: FunctionSchema,
    in_dims: tuple[Any, ...],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> tuple[tuple[Any, ...], list[Any], dict[str, Any]]:
    """A call of ``schema`` as customop passes it to ``rule``: every positional argument
    (defaults filled in, their in_dims None) and every keyword-only one. For adapters
    whose system leaves out arguments at their defaults (torch does)."""
    values, keywords = plan_of(schema, rule.plan).bind(args, kwargs)
    dims = (*in_dims, *([None] * (len(values) - len(in_dims))))
    return dims, values, keywords

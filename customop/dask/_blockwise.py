"""Partition rules: how an op's chunks line up (``op.register_blockwise("ij,jk->ik")``).

A rule is op metadata, like a fake impl: it says, in index notation, how the
dimensions of the op's tensor arguments map to its result's, so an adapter
that splits arrays into chunks (`customop.dask`) knows which chunks to pair.
One lowercase letter per dimension; a letter missing from the output is
contracted (its partial results are combined pairwise with ``combine``,
summed by default); an uppercase letter is a dimension that must be whole,
in one chunk (a softmax over its last dimension: ``"iJ->iJ"``).

A rule is the op's `BLOCKWISE` extra (on its dispatcher entry, with a
handle, like a kernel), checked against the schema when registered
(validate first, then mutate).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NoReturn, final

from customop.dispatch import (
    Dispatcher,
    Extra,
    OperatorHandle,
    RegistrationHandle,
    caller_source,
)
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import RegistrationError
from customop.ops import OpDefinition, operator_handle
from customop.schema import FunctionSchema, tensor_kind

__all__ = [
    "BLOCKWISE",
    "BlockwiseRule",
    "blockwise_rule",
    "parse_blockwise",
    "register_blockwise",
]

_MAX_QUOTE: Final = 200


@final
class BlockwiseRule:
    """A parsed partition rule: per-argument indices, output indices, contracted ones.

    ``inputs`` and ``output`` hold lowercase letters; ``whole`` the letters
    written uppercase (whole dimensions); ``contracted`` the input letters the
    output lacks, in order of appearance; ``combine`` merges two partial
    results of a contraction (None: ``a + b``).
    """

    __slots__ = ("combine", "contracted", "inputs", "output", "source", "spec", "whole")

    def __init__(
        self,
        spec: str,
        inputs: tuple[str, ...],
        output: str,
        whole: frozenset[str],
        *,
        combine: Callable[[Any, Any], Any] | None = None,
        source: str = "",
    ) -> None:
        self.spec = spec
        self.inputs = inputs
        self.output = output
        self.whole = whole
        seen = dict.fromkeys(letter for term in inputs for letter in term)
        self.contracted = tuple(letter for letter in seen if letter not in output)
        self.combine = combine
        self.source = source

    def __repr__(self) -> str:
        return f"<BlockwiseRule {self.spec!r} at {self.source}>"


def _refuse(api: str, what: str, why: str, fix: str) -> NoReturn:
    raise RegistrationError(f"{api}: {what}. {why}. {fix}.")


def parse_blockwise(spec: object, api: str = "register_blockwise") -> BlockwiseRule:
    """``"ij,jk->ik"`` as a `BlockwiseRule` (without a combine or source)."""
    if not isinstance(spec, str) or spec.count("->") != 1:
        _refuse(
            api,
            f"spec {str(spec)[:_MAX_QUOTE]!r} is not 'inputs->output'",
            "A rule names each tensor argument's dimensions, then the result's",
            "Write e.g. 'ij,jk->ik' (matmul) or 'iJ->iJ' (whole last dimension)",
        )
    left, right = spec.replace(" ", "").split("->")
    terms = tuple(left.split(","))
    for term in (*terms, right):
        if not all(c.isascii() and c.isalpha() for c in term):
            _refuse(
                api,
                f"spec {spec[:_MAX_QUOTE]!r} has the term {term!r}, which is not only letters",
                "Each letter is one dimension",
                "Use letters a-z (A-Z for a whole dimension), terms separated by commas",
            )
        if len(set(term.lower())) != len(term):
            _refuse(
                api,
                f"spec {spec[:_MAX_QUOTE]!r} repeats a letter in {term!r}",
                "Chunks of one array cannot be paired with themselves (no diagonals)",
                "Give every dimension of one argument its own letter",
            )
    letters = "".join((*terms, right))
    mixed = sorted({c.lower() for c in letters if c.isupper()} & set(letters))
    if mixed:
        _refuse(
            api,
            f"spec {spec[:_MAX_QUOTE]!r} writes {mixed[0]!r} both lower- and uppercase",
            "An index is either split into chunks or whole, everywhere it appears",
            f"Write {mixed[0].upper()!r} everywhere or nowhere",
        )
    new = sorted(set(right.lower()) - set(left.lower()))
    if new:
        _refuse(
            api,
            f"spec {spec[:_MAX_QUOTE]!r} has output index {new[0]!r} that no input has",
            "Each output chunk is made from the input chunks its indices select",
            "Use only letters that appear in the inputs",
        )
    whole = frozenset(c.lower() for c in letters if c.isupper())
    return BlockwiseRule(spec, tuple(t.lower() for t in terms), right.lower(), whole)


def _check_schema(rule: BlockwiseRule, schema: FunctionSchema, name: str, api: str) -> None:
    kinds = [tensor_kind(arg.type) for arg in schema.arguments]
    tensors = [arg.name for arg, kind in zip(schema.arguments, kinds, strict=True) if kind]
    lists = [
        name for name, kind in zip(tensors, filter(None, kinds), strict=True) if "list" in kind
    ]
    if lists:
        _refuse(
            api,
            f"{name} takes the tensor list {lists[0]!r}",
            "A rule gives each tensor argument a fixed number of dimensions",
            "Register rules for ops whose tensor arguments are Tensor or Tensor?",
        )
    if len(tensors) != len(rule.inputs):
        _refuse(
            api,
            f"spec {rule.spec!r} has {len(rule.inputs)} input term(s), but {name} has "
            f"{len(tensors)} tensor argument(s) ({', '.join(tensors) or 'none'})",
            "Each term names the dimensions of one tensor argument, in schema order",
            f"Write one term per tensor argument of {schema}",
        )
    returns = [str(ret.type) for ret in schema.returns]
    if returns != ["Tensor"]:
        _refuse(
            api,
            f"{name} returns ({', '.join(returns)}), not one Tensor",
            "A rule describes one result's dimensions",
            "Register rules for ops that return a single Tensor",
        )


#: An op's partition rule, owned by this package (see `customop.dispatch.Extra`).
BLOCKWISE: Final[Extra[BlockwiseRule]] = Extra(
    "blockwise rule", owner="customop.dask", describe=lambda rule: repr(rule.spec)
)


def blockwise_rule(op: OperatorHandle) -> BlockwiseRule | None:
    """The partition rule registered for ``op``, or None."""
    return op.extra(BLOCKWISE)


def _add(op: OperatorHandle, rule: BlockwiseRule, api: str) -> RegistrationHandle:
    with op.dispatcher.lock:  # the check and the registration are one write
        existing = op.extra(BLOCKWISE)
        if existing is not None:
            _refuse(
                api,
                f"{op.name} already has the rule {existing.spec!r}, from {existing.source}; "
                f"again at {rule.source}",
                "An op's chunks line up one way, or adapters could not pick",
                "Remove the first rule's handle first",
            )
        return op.dispatcher.register_extra(op, BLOCKWISE, rule, source=rule.source)


def _make(
    op: OperatorHandle, spec: object, combine: object, api: str, source: str
) -> BlockwiseRule:
    parsed = parse_blockwise(spec, api)
    _check_schema(parsed, op.schema, str(op.name), api)
    if combine is not None and not callable(combine):
        _refuse(
            api,
            f"combine={repr(combine)[:_MAX_QUOTE]} is not callable",
            "It merges two partial results of a contraction: combine(a, b)",
            "Pass a customop op, a function of two arrays, or None to sum",
        )
    if combine is not None and not parsed.contracted:
        _refuse(
            api,
            f"combine= was given, but spec {parsed.spec!r} contracts no index",
            "combine merges partial results over contracted indices only",
            "Leave combine out, or drop an index from the output",
        )
    return BlockwiseRule(
        parsed.spec, parsed.inputs, parsed.output, parsed.whole, combine=combine, source=source
    )


def register_blockwise(
    op: object,
    spec: str,
    *,
    combine: Callable[[Any, Any], Any] | None = None,
    dispatcher: Dispatcher | None = None,
) -> RegistrationHandle:
    """Declare how ``op``'s chunks line up, in index notation; return the undo handle.

    ``spec`` names each tensor argument's dimensions, then the result's:
    ``"ij,jk->ik"`` is a matmul (``j`` is contracted: partial results are
    merged pairwise with ``combine(a, b)``, by default summed); an uppercase
    letter is a dimension that must be in one chunk (``"iJ->iJ"``). This is
    the free spelling of ``CustomOpDef.register_blockwise``, for ops defined
    with `Library` too.

    Args:
        op: A `CustomOpDef`, an `OpOverload`, an `OperatorHandle` or a name ``"ns::op"``.
        spec: The rule, one comma-separated term per tensor argument.
        combine: Merges two partial results of a contraction (an op or a callable).
        dispatcher: Where to look ``op`` up when it is a name.

    Returns:
        A `RegistrationHandle` that removes the rule.

    Raises:
        RegistrationError: The spec is malformed, does not match the op's tensor
            arguments, or the op already has a rule.
    """
    d = default_dispatcher if dispatcher is None else dispatcher
    handle = operator_handle(op, d, "register_blockwise")
    api = f"{handle.name}.register_blockwise"
    registered = _add(handle, _make(handle, spec, combine, api, caller_source()), api)
    # A @custom_op's definition owns the rule: a redefinition drops it.
    return op.adopt(registered) if isinstance(op, OpDefinition) else registered

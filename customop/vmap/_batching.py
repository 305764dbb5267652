"""One batched call, below the ``Batched`` key: physical arguments, the rule, the outputs.

The involved levels' batch dimensions are handed to the rule where they
are (one level: no data moves) or, for nested vmaps that both batch the
call, moved to the front and merged into one (``info.batch_size`` is their
product) and split again in the outputs: a rule only ever sees one batch
dimension, as in torch. The rule's result is checked against the schema
(how many outputs, one out_dim each, the batch size where it says) before
anything is wrapped; an op without a rule runs once per example (`_loop`).
"""

from __future__ import annotations

from typing import Any, Final

from customop.autograd import check_input, lost_gradient
from customop.dispatch import OperatorHandle
from customop.exceptions import VmapError
from customop.vmap._arith import refuse
from customop.vmap._loop import loop
from customop.vmap._moves import Moves, moves_of
from customop.vmap._plan import LIST_KINDS, Plan, plan_of
from customop.vmap._rule import Randomness, VmapInfo, VmapRule
from customop.vmap._value import BatchedArray, Level, tags_of

__all__ = ["check_result", "run_batched"]

#: Per return: the physical value and its batch dimension (None: unbatched).
Outputs = list[tuple[Any, Any]]
_ARRAY: Final = ("tensor", "optional")


def run_batched(
    op: OperatorHandle,
    plan: Plan,
    values: list[Any],
    keywords: dict[str, Any],
    involved: list[Level],
    *,
    rule: VmapRule | None,
    depth: int,
) -> Any:
    """Compute ``op`` on the batch (its rule, else the loop); the result, batched.

    ``depth`` autograd tapes (a ``grad`` of the vmapped function) record the
    physical computation; a rule output they cannot follow is refused.
    """
    moves = moves_of(op.dispatcher)
    size = involved[0].batch_size
    for more in involved[1:]:
        size = size * more.batch_size
    info = VmapInfo(size, _randomness(plan, involved, op))
    if plan.mutable:
        _check_writes(plan, values, involved)
    if depth:
        _check_made(op, plan, values)
    physical, in_dims, logical = _physical(plan, values, involved, moves)
    if rule is None:
        outputs = loop(op, plan, physical, in_dims, keywords=keywords, info=info, moves=moves)
    else:
        result = rule.fn(info, tuple(in_dims), *physical, **keywords)
        outputs = _read(plan, rule, result)
        if depth:
            _check_followed(plan, rule, physical, outputs, depth)
    return _Outputs(plan, involved, size, moves, logical).wrap(outputs)


def _check_made(op: OperatorHandle, plan: Plan, values: list[Any]) -> None:
    """Refuse an argument whose physical array plain code made from a value a transform
    around the vmap tracks: named for ``op``, before a move of vmap's own meets it."""
    arguments = plan.schema.arguments
    for index, kind in plan.tensors:
        value = values[index]
        name = arguments[index].name
        if kind in LIST_KINDS:
            for position, item in enumerate(value or ()):
                check_input(op, f"{name}[{position}]", _value(item))
        else:
            check_input(op, name, _value(value))


def _value(value: Any) -> Any:
    return value.value if type(value) is BatchedArray else value


def _arrays(values: list[Any]) -> list[Any]:
    found: list[Any] = []
    for value in values:
        found += value if isinstance(value, list | tuple) else [value]
    return found


def _check_followed(
    plan: Plan, rule: VmapRule, physical: list[Any], outputs: Outputs, depth: int
) -> None:
    lost = lost_gradient(depth, _arrays(physical), _arrays([value for value, _ in outputs]))
    if lost is not None:
        raise VmapError(
            f"vmap: the rule of {plan.name} ({rule!r}) computed an output from a "
            "differentiated input with plain array code instead of customop ops. A grad "
            "around the vmap follows op calls only, so that gradient would silently be "
            "zero. Write the rule's computation with ops (call the op, or other ops with "
            "formulas, on the batched arrays)."
        )


def _randomness(plan: Plan, involved: list[Level], op: OperatorHandle) -> Randomness:
    if len(involved) == 1 and not involved[0].chunked:
        return involved[0].randomness
    kinds = {level.randomness for level in involved}
    random = "nondeterministic_seeded" in op.tags
    if random and len(kinds) > 1:
        refuse(
            f"{plan.name} is a random op batched by nested vmaps with randomness "
            f"{' and '.join(sorted(map(repr, kinds)))}",
            "One rule call serves both levels, and its info.randomness can say only one",
            "Give the nested vmaps the same randomness",
        )
    if random and "same" in kinds and any(level.chunked for level in involved):
        refuse(
            f"{plan.name} is a random op in a vmap with randomness='same' and chunk_size",
            "Each chunk would draw its own random values, so the batch would not share one",
            "Drop chunk_size, or use randomness='different'",
        )
    return involved[-1].randomness


def _check_writes(plan: Plan, values: list[Any], involved: list[Level]) -> None:
    schema = plan.schema
    for index in plan.mutated:
        name = schema.arguments[index].name
        value = values[index]
        items = value if isinstance(value, list | tuple) else [value]
        for item in items:
            if item is None:
                continue
            levels = item.levels if type(item) is BatchedArray else ()
            if len(levels) != len(involved):
                refuse(
                    f"{plan.name} writes into {name!r}, which is not batched like the other "
                    "arguments of the call",
                    "The results of every example cannot be written into an array without "
                    "their batch dimension (torch refuses this too)",
                    f"Batch {name!r} as well, or call a functional (out-of-place) op",
                )
        if len(involved) > 1:
            refuse(
                f"{plan.name} writes into {name!r} inside nested vmaps that both batch the call",
                "Their batch dimensions are merged for the rule, into a copy the write "
                "would not reach",
                "Call the op inside one vmap level, or call a functional op",
            )


def _front(value: BatchedArray, involved: list[Level], moves: Moves) -> Any:
    """The physical array with ``involved``' dimensions first (broadcast where it has
    none), merged into one."""
    if value.merged is not None and value.levels == tuple(involved):
        return value.merged  # the merged output it was split from
    tags = tags_of(value)
    physical = value.value
    for position, level in enumerate(involved):
        if level in tags:
            source = tags.index(level)
            if source != position:
                physical = moves.movedim(physical, source, position)
                tags.insert(position, tags.pop(source))
        else:
            physical = moves.expand(physical, position, level.batch_size)
            tags.insert(position, level)
    return moves.merge(physical, 0, len(involved))


def _one(
    value: Any, involved: list[Level], moves: Moves, logical: dict[int, tuple[Any, int]]
) -> tuple[Any, int | None]:
    if type(value) is not BatchedArray:
        return value, None
    if len(involved) == 1:
        logical[id(value.value)] = (value, value.dims[0])
        return value.value, value.dims[0]
    return _front(value, involved, moves), 0


def _physical(
    plan: Plan, values: list[Any], involved: list[Level], moves: Moves
) -> tuple[list[Any], list[Any], dict[int, tuple[Any, int]]]:
    physical = list(values)
    in_dims: list[Any] = [None] * len(values)
    logical: dict[int, tuple[Any, int]] = {}
    for index, kind in plan.tensors:
        value = values[index]
        if kind in LIST_KINDS and value is not None:
            pairs = [_one(item, involved, moves, logical) for item in value]
            physical[index] = [p for p, _ in pairs]
            in_dims[index] = [d for _, d in pairs]
        elif kind not in LIST_KINDS:
            physical[index], in_dims[index] = _one(value, involved, moves, logical)
    return physical, in_dims, logical


# -- the rule's result -----------------------------------------------------------------


def _wrong(plan: Plan, rule: VmapRule, what: str, fix: str) -> VmapError:
    return VmapError(
        f"vmap: the rule of {plan.name} ({rule!r}) {what}. vmap matches a rule's outputs "
        f"to the op's returns ({plan.schema}) to unbatch them. {fix}."
    )


def check_result(op: OperatorHandle, rule: VmapRule, result: Any) -> None:
    """Raise `VmapError` when ``result`` is not ``(outputs, out_dims)`` fitting ``op``'s schema.

    For adapters that hand ``rule.fn``'s result to another system (torch), so a
    wrong rule is named the same way there.
    """
    _read(plan_of(op.schema, rule.plan), rule, result)


def _read(plan: Plan, rule: VmapRule, result: Any) -> Outputs:
    """``(outputs, out_dims)`` as one (value, dim) per return; raises for a wrong shape."""
    if not isinstance(result, tuple) or len(result) != 2:
        raise _wrong(
            plan,
            rule,
            f"returned {type(result).__name__}, not a pair (outputs, out_dims)",
            "Return (outputs, out_dims), as torch's register_vmap rules do",
        )
    outputs, out_dims = result
    count = len(plan.returns)
    if count == 1 and not (isinstance(outputs, tuple) and plan.returns[0] not in LIST_KINDS):
        values = [outputs]
    elif isinstance(outputs, tuple | list) or (count == 0 and outputs is None):
        values = list(outputs or ())
    else:
        values = [outputs]
    if len(values) != count:
        raise _wrong(
            plan,
            rule,
            f"returned {len(values)} output(s), but the op has {count}",
            "Return one output per return of the schema, as a tuple when there are several",
        )
    dims: list[Any]
    if out_dims is None or isinstance(out_dims, int):
        dims = [out_dims] * count
    elif isinstance(out_dims, tuple | list) and count == 1 and plan.returns[0] in LIST_KINDS:
        dims = [list(out_dims)]
    elif isinstance(out_dims, tuple | list):
        dims = list(out_dims)
    else:
        dims = [out_dims]
    if len(dims) != count:
        raise _wrong(
            plan,
            rule,
            f"returned out_dims {out_dims!r} with {len(dims)} entries for {count} output(s)",
            "Give one out_dim per output (an int, or None for an unbatched one), or one int "
            "for all",
        )
    return list(zip(values, dims, strict=True))


class _Outputs:
    """Turns one call's physical outputs into batched values (checked first)."""

    def __init__(
        self,
        plan: Plan,
        involved: list[Level],
        size: Any,
        moves: Moves,
        logical: dict[int, tuple[Any, int]],
    ) -> None:
        self.plan = plan
        self.involved = involved
        self.size = size
        self.moves = moves
        self.logical = logical

    def batched(self, where: str, value: Any, dim: Any) -> Any:
        """One tensor output at physical ``dim`` as a `BatchedArray` (or as is when None)."""
        name = self.plan.name
        if dim is None or value is None:
            return value
        shape = getattr(value, "shape", None)
        if shape is None or type(value) is BatchedArray or not isinstance(dim, int):
            shown = type(value).__name__ if shape is None or type(value) is BatchedArray else dim
            refuse(
                f"the batching of {name} gave {where} as {shown!r} with out_dim {dim!r}",
                "A batched output is a physical array with the batch dimension at an int out_dim",
                "Return physical arrays from the rule, with an int (or None) out_dim each",
            )
        ndim = len(shape)
        if not -ndim <= dim < ndim or shape[dim] != self.size:
            refuse(
                f"the batching of {name} gave {where} of shape {tuple(shape)} with out_dim "
                f"{dim}, which is not a dimension of size {self.size} (the batch size)",
                "out_dim says where the batch dimension of an output is",
                "Return the out_dim where the rule put the batch dimension",
            )
        dim %= ndim
        involved = self.involved
        if len(involved) == 1:
            return BatchedArray(value, (involved[0],), (dim,))
        parts = [level.batch_size for level in involved]
        split = self.moves.split(value, dim, parts)
        merged = value if dim == 0 else None
        return BatchedArray(split, tuple(involved), tuple(range(dim, dim + len(parts))), merged)

    def wrap(self, outputs: Outputs) -> Any:
        """The op's result: one batched value per return (None, one, or a tuple)."""
        results = [
            self._one(f"output {position}", value, dim, kind)
            for position, ((value, dim), kind) in enumerate(
                zip(outputs, self.plan.returns, strict=True)
            )
        ]
        if not results:
            return None
        return results[0] if len(results) == 1 else tuple(results)

    def _one(self, where: str, value: Any, dim: Any, kind: Any) -> Any:
        same = self.logical.get(id(value))
        if same is not None and same[0].value is value and same[1] == dim:
            return same[0]  # a written input returned: the caller's own object
        if kind in _ARRAY:
            return self.batched(where, value, dim)
        if kind not in LIST_KINDS or value is None:
            return value
        dims = dim if isinstance(dim, list) else [dim] * len(value)
        if len(dims) != len(value):
            refuse(
                f"the batching of {self.plan.name} gave {len(dims)} out_dims for {where}, a "
                f"list of {len(value)} tensors",
                "A Tensor[] output takes one out_dim, or one per tensor",
                "Return one int, or a list as long as the output",
            )
        return [
            self.batched(f"{where}[{i}]", item, d)
            for i, (item, d) in enumerate(zip(value, dims, strict=True))
        ]

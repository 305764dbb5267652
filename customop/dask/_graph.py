"""An op call on dask arrays becomes a lazy dask array: one task per output chunk.

How chunks line up comes from the op's metadata, in this order: its
partition rule (`customop.register_blockwise`), its ``"pointwise"`` tag
(every argument's dimensions aligned from the right, with numpy
broadcasting), or, inside ``customop.dask.options(whole=True)``, one task on
the whole arrays. Without any of these the call raises. Input chunks are
unified as ``dask.array.blockwise`` does; numpy arrays among the arguments
become single-chunk dask arrays first.

A contracted index (in the inputs, not the output) gives one partial task
per chunk along it, then a tree of pairwise ``combine`` tasks, so no task
holds more than two partial results.
"""

from __future__ import annotations

import itertools
import operator
import string
from collections.abc import Callable, Sequence
from typing import Any, Final

from customop.dask._blockwise import blockwise_rule
from customop.dask._chunks import ChunkCall, Slot, chunk_meta, fail, whole_meta
from customop.dask._options import current_options
from customop.dask._ref import OpRef
from customop.dispatch import OperatorHandle
from customop.exceptions import MissingKernelError
from customop.ops import debug_state
from customop.schema import tensor_kind

__all__ = ["call_on_chunks"]

_POINTWISE: Final = "pointwise"


def call_on_chunks(op: OperatorHandle, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``op(*args, **kwargs)`` with dask array arguments, as a lazy dask array."""
    import dask.array as da  # noqa: PLC0415 -- customop never imports dask up front

    entries = _tensor_arguments(op, args, kwargs)
    arrays = [
        value if isinstance(value, da.Array) else da.asarray(value) for _, _, value in entries
    ]
    slots = tuple(slot for _, slot, _ in entries)
    template = tuple(None if i in slots else a for i, a in enumerate(args))
    rest = {k: v for k, v in kwargs.items() if k not in slots}
    call = ChunkCall(OpRef.of(op), template, rest, slots, check=debug_state.active)
    rule = blockwise_rule(op)
    if rule is not None:
        terms = [rule.inputs[term] for term, _, _ in entries]
        _check_ranks(op, rule.spec, arrays, terms)
        return _blockwise(
            op, call, arrays, terms, rule.output, whole=rule.whole, combine=rule.combine
        )
    if _POINTWISE in op.tags:
        ndim = max((array.ndim for array in arrays), default=0)
        letters = string.ascii_letters[:ndim]
        terms = [letters[ndim - array.ndim :] for array in arrays]
        return _blockwise(op, call, arrays, terms, letters, whole=frozenset(), combine=None)
    if current_options().whole:
        return _whole(op, call, arrays)
    raise MissingKernelError(
        f"{op.name} on dask arrays: the op has neither the 'pointwise' tag nor a partition "
        "rule. customop runs an op chunk by chunk, and only the tag or the rule says which "
        "chunks go together. Tag an elementwise op (custom_op(..., tags=('pointwise',))), "
        f"or declare a rule, e.g. op.register_blockwise('ij->ij') (register_blockwise("
        f"{str(op.name)!r}, ...) for Library ops); or run it on one chunk inside "
        "`with customop.dask.options(whole=True):`."
    )


def _tensor_arguments(
    op: OperatorHandle, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[tuple[int, Slot, Any]]:
    """``(term, slot, value)`` of each tensor argument passed: its rule term and its place."""
    schema = op.schema
    written = [arg.name for arg in schema.arguments if arg.is_write]
    if written:
        fail(
            op,
            f"the op writes to its argument {written[0]!r}",
            "A dask array is immutable: tasks make new chunks, they never change old ones",
            "Call a functional variant of the op (one that returns its result)",
        )
    found: list[tuple[int, Slot, Any]] = []
    term = 0
    for index, arg in enumerate(schema.arguments):
        kind = tensor_kind(arg.type)
        if kind is None:
            continue
        slot: Slot = index if index < len(args) else arg.name
        value = args[index] if isinstance(slot, int) else kwargs.get(arg.name)
        if "list" in kind and value:
            fail(
                op,
                f"argument {arg.name!r} is a list of tensors",
                "The Dask backend splits single tensors into chunks",
                "Pass the tensors as separate arguments, or call the op on each chunk yourself",
            )
        if value is not None and "list" not in kind:
            found.append((term, slot, value))
        term += 1
    return found


def _check_ranks(
    op: OperatorHandle, spec: str, arrays: Sequence[Any], terms: Sequence[str]
) -> None:
    for array, term in zip(arrays, terms, strict=True):
        if array.ndim != len(term):
            fail(
                op,
                f"an argument has {array.ndim} dimension(s), but its term {term!r} in the rule "
                f"{spec!r} has {len(term)}",
                "The rule names every dimension of every tensor argument",
                "Pass arrays of the rank the rule declares, or fix the rule",
            )


def _name(op: OperatorHandle, what: str, token: str) -> str:
    prefix = str(op.name).replace("::", ".")
    return f"{prefix}-{what}-{token}" if what else f"{prefix}-{token}"


def _blockwise(
    op: OperatorHandle,
    call: ChunkCall,
    arrays: list[Any],
    terms: list[str],
    output: str,
    *,
    whole: frozenset[str],
    combine: Callable[[Any, Any], Any] | None,
) -> Any:
    import dask.array as da  # noqa: PLC0415
    from dask.base import tokenize  # noqa: PLC0415

    rechunked = "".join(sorted(_rechunk_whole(arrays, terms, whole))).upper()
    pairs = [item for pair in zip(arrays, terms, strict=True) for item in pair]
    chunks, aligned = da.core.unify_chunks(*pairs)
    out_chunks, out_dtype = chunk_meta(op, call, aligned, terms=terms, output=output, chunks=chunks)
    names = (a.name for a in aligned)
    token = tokenize(call.op.token, call.args, call.kwargs, call.check, *names, output)
    what = f"rechunked-{rechunked}" if rechunked else ""
    contracted = "".join(dict.fromkeys(c for term in terms for c in term if c not in output))
    meta = _meta(len(output) + len(contracted), out_dtype.numpy)
    adjust = {c: out_chunks[c] for c in output if out_chunks[c] != chunks[c]}
    aligned_pairs = [item for pair in zip(aligned, terms, strict=True) for item in pair]
    name = _name(op, what, token)
    partial = da.blockwise(
        call,
        output + contracted,
        *aligned_pairs,
        name=f"{name}-partial" if contracted else name,
        meta=meta,
        adjust_chunks=adjust or None,
        align_arrays=False,
    )
    if not contracted:
        return partial
    merge: Callable[[Any, Any], Any] = operator.add if combine is None else _by_reference(combine)
    numblocks = [len(chunks[c]) for c in output]
    across = [len(chunks[c]) for c in contracted]
    return _tree(
        partial,
        name,
        merge,
        numblocks=numblocks,
        across=across,
        out_chunks=out_chunks,
        output=output,
        meta=meta,
    )


def _rechunk_whole(arrays: list[Any], terms: list[str], whole: frozenset[str]) -> set[str]:
    """Put every whole (uppercase) index in one chunk; the indices that needed it."""
    done: set[str] = set()
    for position, (array, term) in enumerate(zip(arrays, terms, strict=True)):
        axes = {dim: -1 for dim, c in enumerate(term) if c in whole and array.numblocks[dim] > 1}
        if axes:
            arrays[position] = array.rechunk(axes)
            done.update(term[dim] for dim in axes)
    return done


def _by_reference(combine: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A customop op as combine travels by name, like the op itself."""
    op = getattr(getattr(combine, "op", combine), "handle", None)
    return OpRef.of(op) if isinstance(op, OperatorHandle) else combine


def _meta(ndim: int, element: Any) -> Any:
    import numpy  # noqa: PLC0415 -- numpy stays off `import customop`'s clock

    return numpy.empty((0,) * ndim, dtype=element)


def _tree(
    partial: Any,
    name: str,
    merge: Callable[[Any, Any], Any],
    *,
    numblocks: list[int],
    across: list[int],
    out_chunks: dict[str, tuple[float, ...]],
    output: str,
    meta: Any,
) -> Any:
    """Combine the partial results of each output chunk pairwise, as a tree of tasks."""
    import dask.array as da  # noqa: PLC0415
    from dask._task_spec import Alias, Task, TaskRef  # noqa: PLC0415
    from dask.highlevelgraph import HighLevelGraph  # noqa: PLC0415

    layer: dict[Any, Any] = {}
    combined = f"{name}-combine"
    for index in itertools.product(*map(range, numblocks)):
        keys = [(partial.name, *index, *c) for c in itertools.product(*map(range, across))]
        level = 0
        while len(keys) > 2:
            merged = []
            for j in range(0, len(keys) - 1, 2):
                key = (combined, *index, level, j // 2)
                layer[key] = Task(key, merge, TaskRef(keys[j]), TaskRef(keys[j + 1]))
                merged.append(key)
            keys = merged + keys[len(keys) - len(keys) % 2 :]
            level += 1
        final = (name, *index)
        if len(keys) == 2:
            layer[final] = Task(final, merge, TaskRef(keys[0]), TaskRef(keys[1]))
        else:
            layer[final] = Alias(final, keys[0])
    graph = HighLevelGraph.from_collections(name, layer, dependencies=[partial])
    chunks = tuple(out_chunks[c] for c in output)
    return da.Array(graph, name, chunks=chunks, meta=_meta(len(output), meta.dtype))


def _whole(op: OperatorHandle, call: ChunkCall, arrays: list[Any]) -> Any:
    """One task on the whole arrays (``options(whole=True)``)."""
    import dask.array as da  # noqa: PLC0415
    from dask._task_spec import Task, TaskRef  # noqa: PLC0415
    from dask.base import tokenize  # noqa: PLC0415
    from dask.highlevelgraph import HighLevelGraph  # noqa: PLC0415

    single = [a.rechunk(-1) if a.npartitions > 1 else a for a in arrays]
    chunks, out_dtype = whole_meta(op, call, single)
    token = tokenize(call.op.token, call.args, call.kwargs, call.check, *(a.name for a in single))
    name = _name(op, "whole", token)
    key = (name, *(0,) * len(chunks))
    refs = [TaskRef((a.name, *(0,) * a.ndim)) for a in single]
    graph = HighLevelGraph.from_collections(
        name, {key: Task(key, call, *refs)}, dependencies=single
    )
    return da.Array(graph, name, chunks=chunks, meta=_meta(len(chunks), out_dtype.numpy))

"""What a task calls, and each output chunk's size and dtype from the op's fake impl.

`ChunkCall` is the function of every task: the op's call with its tensor
arguments left as holes that the task's chunks fill; non-tensor arguments
(scalars, lists, strings) travel inside it. `chunk_meta` calls the op's fake
impl on fakes of the input chunks, once per distinct combination of chunk
sizes (a regular chunking has at most two sizes per dimension), so building a
graph never runs a kernel and costs a few fake calls, not one per chunk.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, Final, NoReturn

from customop.dask._ref import OpRef
from customop.dispatch import OperatorHandle
from customop.exceptions import DebugCheckError
from customop.fake import FakeTensorMode
from customop.tensor import FakeTensor, SymInt, dtype, to_dtype

__all__ = ["ChunkCall", "Slot", "chunk_meta", "fail", "whole_meta"]

#: Where a tensor argument sits in a call: a position, or a keyword's name.
Slot = int | str
_NAN: Final = math.nan


def fail(op: OperatorHandle, what: str, why: str, fix: str) -> NoReturn:
    """Raise the Dask backend's call-time error for ``op``, in four parts."""
    raise ValueError(f"{op.name} on dask arrays: {what}. {why}. {fix}.")


class ChunkCall:
    """A task's function: ``call(*chunks)`` runs the op with the chunks in its tensor slots.

    With ``check`` (a graph built inside ``customop.debug_checks()``), each
    result is compared with what the op's fake impl gives for the same chunks;
    otherwise the fake is trusted, as the graph's metadata already is.
    """

    __slots__ = ("args", "check", "kwargs", "op", "slots")

    def __init__(
        self,
        op: OpRef,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        slots: tuple[Slot, ...],
        *,
        check: bool = False,
    ) -> None:
        self.op = op
        self.args = args
        self.kwargs = kwargs
        self.slots = slots
        self.check = check

    def __call__(self, *chunks: Any) -> Any:
        args, kwargs = _filled(self, chunks)
        result = self.op(*args, **kwargs)
        if self.check:
            _check_chunk(self, chunks, result)
        return result

    def __repr__(self) -> str:
        return f"<chunks of {self.op.name}>"


def _check_chunk(call: ChunkCall, chunks: Sequence[Any], result: Any) -> None:
    """Raise `DebugCheckError` when a computed chunk is not what the fake impl says."""
    with FakeTensorMode() as mode:
        args, kwargs = _filled(call, [mode.from_real(chunk) for chunk in chunks])
        fake = call.op(*args, **kwargs)
    got_dtype = _dtype_name(result)
    got_shape = tuple(getattr(result, "shape", ()))
    want = tuple(fake.shape)
    same_shape = len(got_shape) == len(want) and all(
        isinstance(size, SymInt) or size == found
        for size, found in zip(want, got_shape, strict=True)
    )
    if got_dtype == fake.dtype.name and same_shape:
        return
    shown = tuple(str(size) for size in want)
    raise DebugCheckError(
        f"{call.op.name} on dask arrays: a computed chunk has dtype {got_dtype} and shape "
        f"{got_shape}, but the op's fake impl gives dtype {fake.dtype.name} and shape "
        f"({', '.join(shown)}{',' if len(shown) == 1 else ''}) for the same input chunks. The "
        "lazy array's dtype and chunk sizes come from the fake impl, so the array would "
        "describe its chunks wrongly. Make the fake impl and the kernel agree."
    )


def _dtype_name(value: Any) -> str:
    try:
        return to_dtype(value.dtype).name
    except (AttributeError, TypeError, ValueError):
        return repr(getattr(value, "dtype", type(value).__name__))


def chunk_meta(
    op: OperatorHandle,
    call: ChunkCall,
    arrays: Sequence[Any],
    *,
    terms: Sequence[str],
    output: str,
    chunks: dict[str, tuple[float, ...]],
) -> tuple[dict[str, tuple[float, ...]], dtype]:
    """The output chunk sizes per output index, and the output dtype, from the fake impl.

    ``chunks`` are the unified input chunks per index. A size the fake impl
    leaves symbolic (``new_dynamic_size``) becomes NaN, as Dask marks unknown
    sizes; an unknown (NaN) input size reaches the fake impl as a symbol.
    """
    letters = list(dict.fromkeys(letter for term in terms for letter in term))
    # dict.fromkeys, not a loop: a graph of 10,000 chunks must not cost 10,000 steps here.
    distinct = [tuple(dict.fromkeys(chunks[letter])) for letter in letters]
    sizes: dict[str, dict[float, float]] = {letter: {} for letter in output}
    found: dtype | None = None
    with FakeTensorMode() as mode:
        for combo in itertools.product(*distinct):
            chosen = dict(zip(letters, combo, strict=True))
            fakes = [_fake(a, term, chosen, mode) for a, term in zip(arrays, terms, strict=True)]
            args, kwargs = _filled(call, fakes)
            result = op(*args, **kwargs)
            found = _check_result(op, result, output, found)
            for position, letter in enumerate(output):
                size = result.shape[position]
                value = _NAN if isinstance(size, SymInt) else int(size)
                previous = sizes[letter].setdefault(chosen[letter], value)
                if previous != value and not (math.isnan(previous) and math.isnan(value)):
                    _depends_on_others(op, letter)
    if found is None:  # an input with a zero-length dimension split into no chunks
        found = to_dtype(arrays[0].dtype)
    return {letter: _map_sizes(chunks[letter], sizes[letter]) for letter in output}, found


def _map_sizes(chunks: tuple[float, ...], sizes: dict[float, float]) -> tuple[float, ...]:
    """Each input chunk size replaced by the output size the fake impl gave for it."""
    if all(key is value or key == value for key, value in sizes.items()):
        return chunks  # the common case: the op keeps every size
    try:
        return tuple(map(sizes.__getitem__, chunks))
    except KeyError:  # a NaN that is not the object used as key: NaN != NaN
        nan = next((v for k, v in sizes.items() if math.isnan(k)), _NAN)
        return tuple(nan if math.isnan(c) else sizes[c] for c in chunks)


def whole_meta(
    op: OperatorHandle, call: ChunkCall, arrays: Sequence[Any]
) -> tuple[tuple[tuple[float, ...], ...], dtype]:
    """The chunks (one per dimension) and dtype of the op's result on whole arrays."""
    with FakeTensorMode() as mode:
        fakes = [
            FakeTensor(
                tuple(mode.new_dynamic_size() if math.isnan(s) else int(s) for s in a.shape),
                to_dtype(a.dtype),
                "cpu",
            )
            for a in arrays
        ]
        args, kwargs = _filled(call, fakes)
        result = op(*args, **kwargs)
    found = _check_result(op, result, "?" * getattr(result, "ndim", 0), None)
    chunks = tuple((_NAN if isinstance(s, SymInt) else int(s),) for s in result.shape)
    return chunks, found


def _fake(array: Any, term: str, chosen: dict[str, float], mode: FakeTensorMode) -> FakeTensor:
    shape: list[int | SymInt] = []
    for dim, letter in enumerate(term):
        if array.numblocks[dim] == 1 and array.shape[dim] == 1:
            shape.append(1)  # a broadcast dimension: every task gets the same one-wide chunk
            continue
        size = chosen[letter]
        shape.append(mode.new_dynamic_size() if math.isnan(size) else int(size))
    return FakeTensor(tuple(shape), to_dtype(array.dtype), "cpu")


def _filled(call: ChunkCall, chunks: Sequence[Any]) -> tuple[list[Any], dict[str, Any]]:
    args = list(call.args)
    kwargs = dict(call.kwargs)
    for slot, chunk in zip(call.slots, chunks, strict=True):
        if isinstance(slot, int):
            args[slot] = chunk
        else:
            kwargs[slot] = chunk
    return args, kwargs


def _check_result(op: OperatorHandle, result: object, output: str, found: dtype | None) -> dtype:
    if not isinstance(result, FakeTensor):
        fail(
            op,
            f"its fake impl returned {type(result).__qualname__}, not one tensor",
            "Each task makes one output chunk, described by the fake impl",
            "Return one tensor from the op (and its fake impl)",
        )
    if result.ndim != len(output):
        fail(
            op,
            f"its fake impl returned a {result.ndim}-d chunk, but the partition rule's output "
            f"{output!r} has {len(output)} dimension(s)",
            "The rule names every dimension of the result",
            "Fix the spec given to register_blockwise",
        )
    if found is not None and result.dtype != found:
        fail(
            op,
            f"its fake impl gives dtype {result.dtype} for some chunks and {found} for others",
            "A Dask array has one dtype",
            "Make the fake impl's dtype depend on the input dtypes only",
        )
    return result.dtype


def _depends_on_others(op: OperatorHandle, letter: str) -> NoReturn:
    fail(
        op,
        f"the size of output index {letter!r} changes with the size of other indices",
        "Dask needs each output chunk size along an index to follow that index's input chunks",
        "Make the index whole (uppercase) in the rule, or fix the fake impl",
    )

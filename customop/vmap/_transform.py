"""``customop.vmap``: ``torch.func.vmap`` over functions of customop ops, on every backend.

The call wraps each batched argument in a `BatchedArray` of a new `Level`
(no data moves: the wrapper records where the batch dimension is), runs
``fn`` with the ``Batched`` key included, and unbatches the outputs to
``out_dims`` with vmap's own ops (`Moves`), so transforms around the call
see every step. ``in_dims`` and ``out_dims`` are prefixes of the arguments'
and outputs' structures (`_tree`), as in torch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NoReturn

from customop.autograd import tape_depth, unwrap
from customop.dispatch import Dispatcher, DispatchKey, include_keys
from customop.dispatch import dispatcher as default_dispatcher
from customop.vmap._arith import refuse
from customop.vmap._install import install
from customop.vmap._moves import Moves
from customop.vmap._rule import RANDOMNESS, Randomness
from customop.vmap._tree import Tree, broadcast, flatten, unflatten
from customop.vmap._value import (
    LEVELS,
    PHYSICAL,
    BatchedArray,
    Level,
    Physical,
    from_tags,
    tags_of,
)

__all__ = ["vmap"]


def _is_array(value: object) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, type)


def _position(tags: list[Level | None], logical: int) -> int:
    """The physical index before which logical dimension ``logical`` sits in ``tags``."""
    count = 0
    for index, tag in enumerate(tags):
        if tag is None:
            if count == logical:
                return index
            count += 1
    return len(tags)


class _Call:
    """One call of a vmapped function: its options, for the steps and their messages."""

    def __init__(
        self,
        fn: Callable[..., Any],
        in_dims: Any,
        out_dims: Any,
        randomness: Randomness,
        moves: Moves,
    ) -> None:
        self.fn = fn
        self.in_dims = in_dims
        self.out_dims = out_dims
        self.randomness = randomness
        self.moves = moves
        self.name = getattr(fn, "__name__", type(fn).__name__)

    def fail(self, what: str) -> NoReturn:
        raise ValueError(
            f"vmap({self.name}, in_dims={self.in_dims!r}, out_dims={self.out_dims!r}): {what}. "
            "in_dims and out_dims say, per argument and per output, where the batch "
            "dimension is (an int, or None for none), as in torch.func.vmap. Fix them to "
            "match the call."
        )

    # -- inputs ---------------------------------------------------------------------

    def input_dims(self, args: tuple[Any, ...], tree: Tree, leaves: list[Any]) -> list[Any]:
        if isinstance(self.in_dims, int) and not isinstance(self.in_dims, bool):
            dims = [self.in_dims] * len(leaves)
        elif isinstance(self.in_dims, tuple):
            if len(self.in_dims) != len(args):
                self.fail(f"in_dims has {len(self.in_dims)} entries for {len(args)} arguments")
            dims = broadcast(self.in_dims, tree, "in_dims", self.fail)
        else:
            self.fail(f"in_dims must be an int or a tuple, got {type(self.in_dims).__name__}")
        return [self._check_in(leaf, dim) for leaf, dim in zip(leaves, dims, strict=True)]

    def _check_in(self, leaf: Any, dim: int | None) -> int | None:
        if dim is None:
            return None
        if not _is_array(leaf):
            self.fail(
                f"in_dim={dim} is given for a {type(leaf).__name__}, but only arrays can be "
                "batched; use None as its in_dim"
            )
        ndim = len(leaf.shape)
        if not -ndim <= dim < ndim:
            self.fail(
                f"in_dim={dim} is given for an array of {ndim} dimension(s); it must satisfy "
                f"{-ndim} <= in_dim < {ndim}"
            )
        return dim % ndim

    def batch_size(self, leaves: list[Any], dims: list[int | None]) -> Any:
        sizes = [leaf.shape[dim] for leaf, dim in zip(leaves, dims, strict=True) if dim is not None]
        if not sizes:
            self.fail("no argument is batched (every in_dim is None)")
        if any(size != sizes[0] for size in sizes[1:]):
            self.fail(f"the batched arguments have sizes {sizes} in their batch dimensions")
        return sizes[0]

    # -- one level ------------------------------------------------------------------

    def run(
        self, leaves: list[Any], tree: Tree, dims: list[Any], size: Any, kwargs: dict[str, Any],
        *, chunked: bool,
    ) -> Any:  # fmt: skip
        outer = LEVELS.get()
        depth = tape_depth()
        if outer and depth > outer[-1].depth:
            refuse(
                f"vmap({self.name}) runs inside a grad inside {outer[-1]!r}",
                "A transform between two vmaps would need its own view of the batch, which "
                "customop does not keep (vmap(grad(f)), grad(vmap(f)) and vmap(vmap(f)) work)",
                "Move the grad outside both vmaps or inside the inner one",
            )
        level = Level(size, self.randomness, len(outer), depth, self.name, chunked=chunked)
        wrapped = [
            leaf if dim is None else _add_level(leaf, level, dim)
            for leaf, dim in zip(leaves, dims, strict=True)
        ]
        token = LEVELS.set((*outer, level))
        user = PHYSICAL.set(False)  # fn's op calls are batched, even from inside a rule
        try:
            with include_keys(DispatchKey.Batched):
                out = self.fn(*unflatten(tree, wrapped), **kwargs)
        finally:
            PHYSICAL.reset(user)
            LEVELS.reset(token)
        with Physical():
            return self.unbatch(out, level)

    def run_chunks(
        self, leaves: list[Any], tree: Tree, dims: list[Any], size: int, kwargs: dict[str, Any],
        *, chunk_size: int,
    ) -> Any:  # fmt: skip
        """`run` on chunks of at most ``chunk_size`` examples, outputs concatenated."""
        outputs: list[list[Any]] = []
        out_tree = None
        for start in range(0, size, chunk_size):
            length = min(chunk_size, size - start)
            with Physical():
                part = [
                    leaf if dim is None else _narrow(self.moves, leaf, dim, start, length)
                    for leaf, dim in zip(leaves, dims, strict=True)
                ]
            found, out_tree = flatten(self.run(part, tree, dims, length, kwargs, chunked=True))
            outputs.append(found)
        assert out_tree is not None  # size >= 1, so there was a chunk
        out_dims = self.output_dims(out_tree)
        joined = []
        with Physical():
            for index, dim in enumerate(out_dims):
                items = [found[index] for found in outputs]
                joined.append(items[0] if dim is None else _cat(self, items, dim))
        return unflatten(out_tree, joined)

    def output_dims(self, tree: Tree) -> list[Any]:
        prefix = self.out_dims
        if isinstance(prefix, tuple) and len(prefix) == 1 and tree.kind is None:
            prefix = prefix[0]  # torch accepts out_dims=(0,) for a single output
        if prefix is not None and not isinstance(prefix, int | tuple):
            self.fail(f"out_dims must be an int, None or a tuple, got {type(prefix).__name__}")
        return broadcast(prefix, tree, "out_dims", self.fail)

    def unbatch(self, out: Any, level: Level) -> Any:
        leaves, tree = flatten(out)
        dims = self.output_dims(tree)
        found = [self._unbatch(leaf, level, dim) for leaf, dim in zip(leaves, dims, strict=True)]
        return unflatten(tree, found)

    def _unbatch(self, leaf: Any, level: Level, dim: int | None) -> Any:
        leaf = _batched(leaf)
        batched = type(leaf) is BatchedArray
        if batched and any(other.index > level.index for other in leaf.levels):
            refuse(
                f"{self.name} returned a batched value of an inner vmap that has ended",
                "A batched value belongs to the vmap call that made it",
                "Return the inner vmap's result, not values from inside it",
            )
        mine = batched and level in leaf.levels
        if dim is None:
            if mine:
                self.fail(f"{self.name} returned a batched array for an output with out_dim None")
            return leaf
        if not _is_array(leaf):
            self.fail(
                f"{self.name} returned a {type(leaf).__name__} for an output with out_dim "
                f"{dim}; only arrays can be unbatched (use None as its out_dim)"
            )
        ndim = len(leaf.shape) + 1
        if not -ndim <= dim < ndim:
            self.fail(f"out_dim={dim} is out of range for an output of {ndim} dimension(s)")
        tags = tags_of(leaf)
        physical = leaf.value if batched else leaf
        if mine:
            source = tags.index(level)
            del tags[source]
            target = _position(tags, dim % ndim)
            if target != source:
                physical = self.moves.movedim(physical, source, target)
        else:
            target = _position(tags, dim % ndim)
            physical = self.moves.expand(physical, target, level.batch_size)
        tags.insert(target, None)
        return from_tags(physical, tags)


def _batched(leaf: Any) -> Any:
    """A batched value without the wrapper of a transform entered inside its vmap.

    Such a transform has ended when its value reaches vmap's own code (its result,
    or ``value_and_grad``'s value while a transform outside still records); the
    wrapper only marks what that transform tracked, and the value is the batched one.
    """
    if type(leaf) is BatchedArray:
        return leaf
    inside = unwrap(leaf)
    return inside if type(inside) is BatchedArray else leaf


def _add_level(leaf: Any, level: Level, dim: int) -> BatchedArray:
    tags = tags_of(leaf)
    tags[_position(tags, dim)] = level
    result = from_tags(leaf.value if type(leaf) is BatchedArray else leaf, tags)
    assert type(result) is BatchedArray  # a tag was just set
    return result


def vmap(
    fn: Callable[..., Any],
    in_dims: Any = 0,
    out_dims: Any = 0,
    *,
    randomness: Randomness = "error",
    chunk_size: int | None = None,
    dispatcher: Dispatcher | None = None,
) -> Callable[..., Any]:
    """``fn`` mapped over a batch dimension of its arguments, as ``torch.func.vmap``.

    Inside, ``fn`` sees one example: each batched argument is a
    `BatchedArray` with an example's shape. Every customop op it calls runs
    on the whole batch at once through the op's rule (``register_vmap``);
    an op without one runs once per example (correct, slow, warned once).
    Elementwise arithmetic and basic indexing on batched values are exact;
    other plain array code raises `VmapError`.

    Args:
        fn: A function of customop ops (numpy, torch or any backend's arrays).
        in_dims: Per positional argument, the dimension to map over (an int,
            or None for an unbatched argument), as a prefix of the arguments'
            structure: one int for all, or a tuple with one entry per argument
            (nested for tuples, lists and dicts). Keyword arguments are never batched.
        out_dims: Where the batch dimension goes in each output (prefix of the
            outputs' structure; None for an output that does not depend on the batch).
        randomness: For ops tagged ``nondeterministic_seeded``: ``"error"``
            refuses them, ``"different"`` gives each example its own draws,
            ``"same"`` one draw for the batch.
        chunk_size: Run the batch in chunks of at most this many examples
            (less memory at once; the results are concatenated).
        dispatcher: The dispatcher of the ops (default: ``customop.dispatcher``).

    Returns:
        A function with ``fn``'s parameters returning ``fn``'s outputs, batched.

    Raises:
        ValueError: ``in_dims`` / ``out_dims`` do not match the arguments or outputs.
        VmapError: ``fn`` does something that cannot be batched exactly.

    Examples:
        >>> import numpy as np
        >>> import customop
        >>> d = customop.Dispatcher()
        >>> @customop.custom_op("docvmap::rowsum", mutates_args=(), dispatcher=d)
        ... def rowsum(x: np.ndarray) -> np.ndarray:
        ...     return x.sum(-1)
        >>> @rowsum.register_vmap
        ... def rowsum_rule(info, in_dims, x):
        ...     return rowsum(np.moveaxis(x, in_dims[0], 0)), 0
        >>> customop.vmap(rowsum, in_dims=1, dispatcher=d)(np.ones((2, 3, 4)))
        array([[4., 4.],
               [4., 4.],
               [4., 4.]])
    """
    if not callable(fn):
        raise TypeError(f"vmap: fn must be callable, got {fn!r:.100}. Pass the function to map.")
    if randomness not in RANDOMNESS:
        raise ValueError(
            f"vmap: randomness={randomness!r} is not one of {', '.join(map(repr, RANDOMNESS))}. "
            "It says how random ops behave across the batch. Pass one of those."
        )
    if chunk_size is not None and (
        not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1
    ):
        raise ValueError(
            f"vmap: chunk_size={chunk_size!r} is not a positive int. It is how many examples "
            "run at once. Pass an int >= 1, or None for the whole batch."
        )
    target = default_dispatcher if dispatcher is None else dispatcher
    made: list[_Call] = []  # made on the first call (installing vmap in the dispatcher)

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        if not made:
            made.append(_Call(fn, in_dims, out_dims, randomness, install(target)))
        call = made[0]
        leaves, tree = flatten(args)
        leaves = [_batched(leaf) for leaf in leaves]
        dims = call.input_dims(args, tree, leaves)
        size = call.batch_size(leaves, dims)
        if chunk_size is None or chunk_size >= size:
            return call.run(leaves, tree, dims, size, kwargs, chunked=False)
        return call.run_chunks(leaves, tree, dims, size, kwargs, chunk_size=chunk_size)

    return run


def _narrow(moves: Moves, leaf: Any, dim: int, start: int, length: int) -> Any:
    tags = tags_of(leaf)
    physical = leaf.value if type(leaf) is BatchedArray else leaf
    narrowed = moves.narrow(physical, _position(tags, dim), start, length)
    return from_tags(narrowed, tags)


def _cat(call: _Call, items: list[Any], dim: int) -> Any:
    tags = tags_of(items[0])
    if any(tags_of(item) != tags for item in items[1:]):
        refuse(
            f"{call.name} returned outputs batched differently in different chunks",
            "chunk_size concatenates each output's chunks along one dimension",
            "Return outputs batched the same way for every example",
        )
    ndim = len(items[0].shape)
    physical = [item.value if type(item) is BatchedArray else item for item in items]
    joined = call.moves.cat(physical, _position(tags, dim % ndim))
    return from_tags(joined, tags)

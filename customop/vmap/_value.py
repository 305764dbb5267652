"""What a vmapped function sees: `BatchedArray` values, one batch dimension per `Level`.

NOTE: a wrapper type, not identity tracking (as ``customop.autograd``'s tape
is). A function inside ``vmap`` must see each example's shape (``x.shape``
without the batch dimension) and must not compute on the whole batch with
plain array code, which would silently mix examples. A `BatchedArray` carries
the ``Batched`` dispatch key, so every op call on one reaches the batching
interpreter (`customop.vmap._interpreter`), shows the per-example shape, and
either computes exactly (elementwise arithmetic, basic indexing: `_arith`)
or refuses with `VmapError`.

One wrapper serves every nesting level: ``value`` is the physical array
holding all batch dimensions, ``levels`` the vmap calls it is batched for
(outermost first) and ``dims`` where each one's batch dimension is in
``value``. A level's `Level.index` is its nesting depth; levels are compared
by identity.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Final, final

from customop.vmap._arith import Arithmetic
from customop.vmap._rule import Randomness

__all__ = ["LEVELS", "PHYSICAL", "BatchedArray", "Level", "Physical", "from_tags", "tags_of"]


@final
class Level:
    """One running ``vmap`` call: its batch size, randomness and place among the others.

    ``depth`` is how many autograd tapes were recording when it started: the
    tapes after those belong to transforms entered inside it.
    """

    __slots__ = ("__weakref__", "batch_size", "chunked", "depth", "index", "name", "randomness")

    def __init__(
        self,
        batch_size: int,
        randomness: Randomness,
        index: int,
        depth: int,
        name: str,
        *,
        chunked: bool = False,
    ) -> None:
        self.batch_size = batch_size
        self.randomness = randomness
        self.index = index
        self.depth = depth
        self.name = name
        #: Whether this level runs one chunk of a larger batch (``chunk_size``).
        self.chunked = chunked

    def __repr__(self) -> str:
        return f"<vmap level {self.index} of {self.name}: batch {self.batch_size}>"


#: The running vmap calls of this thread / task, outermost first.
LEVELS: Final[ContextVar[tuple[Level, ...]]] = ContextVar("customop.vmap.levels", default=())
#: Whether vmap's own code runs now (a rule, the loop, moving batch dimensions): op
#: calls then compute on physical arrays and pass the interpreter by.
PHYSICAL: Final[ContextVar[bool]] = ContextVar("customop.vmap.physical", default=False)


@final
class Physical:
    """``with Physical():`` runs vmap's own code: op calls inside are not batched again.

    NOTE: a context variable, not ``exclude_keys(Batched)``: a local-keys block
    costs several µs to enter (an interned key-set value under a lock), this a
    fraction of one, and it is entered once per batched op call.
    """

    __slots__ = ("token",)

    def __enter__(self) -> None:
        self.token = PHYSICAL.set(True)

    def __exit__(self, *exc: object) -> None:
        PHYSICAL.reset(self.token)


@final
class BatchedArray(Arithmetic):
    """A value inside ``customop.vmap``: one example's view of a batched array.

    ``shape``, ``ndim`` and ``dtype`` are an example's; customop ops called
    with it run batched (through their rule, or a loop). Plain array code
    works only where it is exact (elementwise arithmetic, basic indexing);
    anything else raises `VmapError`, never a result mixing examples.

    Attributes:
        value: The physical array, with every batch dimension in it.
        levels: The vmap levels it is batched for, outermost first.
        dims: The position in ``value`` of each level's batch dimension.
        shape: An example's shape (``value``'s without the batch dimensions).
    """

    __slots__ = ("dims", "levels", "merged", "shape", "value")

    def __init__(
        self, value: Any, levels: tuple[Level, ...], dims: tuple[int, ...], merged: Any = None
    ) -> None:
        self.value = value
        self.levels = levels
        self.dims = dims
        physical = tuple(value.shape)
        self.shape = tuple(size for i, size in enumerate(physical) if i not in dims)
        #: For an output of a call that merged nested levels: that physical output, with
        #: the levels merged at dimension 0 (so the next such call skips a merge).
        self.merged = merged

    @property
    def ndim(self) -> int:
        """An example's number of dimensions."""
        return len(self.shape)

    @property
    def dtype(self) -> Any:
        """The element type (the physical array's)."""
        return self.value.dtype

    @property
    def device(self) -> Any:
        """The device (the physical array's)."""
        return getattr(self.value, "device", "cpu")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d batched value: an example has no first dimension")
        return int(self.shape[0])

    def __repr__(self) -> str:
        pairs = zip(self.levels, self.dims, strict=True)
        levels = ", ".join(f"{level.index}@{dim}" for level, dim in pairs)
        return (
            f"BatchedArray(shape={self.shape}, dtype={self.dtype}, levels=[{levels}], "
            f"value={type(self.value).__name__}{tuple(self.value.shape)})"
        )


def tags_of(value: Any) -> list[Level | None]:
    """Per physical dimension of ``value``: the level whose batch dimension it is, or None."""
    if type(value) is not BatchedArray:
        return [None] * len(value.shape)
    tags: list[Level | None] = [None] * len(value.value.shape)
    for level, dim in zip(value.levels, value.dims, strict=True):
        tags[dim] = level
    return tags


def from_tags(physical: Any, tags: list[Level | None]) -> Any:
    """``physical`` as a `BatchedArray` with the batch dimensions ``tags`` says (or as is)."""
    found = sorted(
        ((level, dim) for dim, level in enumerate(tags) if level is not None),
        key=lambda pair: pair[0].index,
    )
    if not found:
        return physical
    return BatchedArray(
        physical, tuple(level for level, _ in found), tuple(dim for _, dim in found)
    )

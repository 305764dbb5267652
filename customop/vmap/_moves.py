"""vmap's own data movement, as ops: moving, adding, merging and slicing batch dimensions.

NOTE: ops, not plain array code. What vmap does to the physical arrays
(moving a batch dimension to where ``out_dims`` wants it, broadcasting an
unbatched output, merging two levels' dimensions for one rule call, the
loop fallback's slicing and stacking, ``chunk_size``'s chunks) must be seen
by the transforms around it: a ``grad`` of a vmapped function records it, a
``trace`` puts it in the graph. So each move is an op in the ``vmap``
namespace of the dispatcher vmap runs on, with a fake impl and an autograd
formula, like ``customop.autograd``'s own ``add``. The kernels use only
indexing, ``reshape``, ``permute``/``transpose``, ``sum`` and the backend's
``empty`` (numpy, torch, cupy and user arrays that have them); a backend
without them registers its own kernels for these ops.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Final

from customop.autograd import formula_of, register_autograd
from customop.dispatch import Dispatcher, DispatchKey, OperatorHandle
from customop.tensor import new_empty
from customop.vmap._arith import permute

__all__ = ["MOVES", "Moves", "moves_of"]

_SOURCE: Final = "<customop vmap>"
_ALL: Final = slice(None)


def _order(ndim: int, source: int, destination: int) -> list[int]:
    order = [i for i in range(ndim) if i != source]
    order.insert(destination, source)
    return order


def _inserted(shape: Any, dim: int, size: Any) -> tuple[Any, ...]:
    sizes = list(shape)
    sizes.insert(dim, size)
    return tuple(sizes)


def _removed(shape: Any, dim: int) -> tuple[Any, ...]:
    sizes = list(shape)
    del sizes[dim]
    return tuple(sizes)


def _merged(shape: Any, dim: int, count: int) -> tuple[Any, ...]:
    sizes = list(shape)
    total = sizes[dim]
    for size in sizes[dim + 1 : dim + count]:
        total = total * size
    return (*sizes[:dim], total, *sizes[dim + count :])


def _split(shape: Any, dim: int, parts: list[Any]) -> tuple[Any, ...]:
    sizes = list(shape)
    return (*sizes[:dim], *parts, *sizes[dim + 1 :])


def _at(dim: int, index: Any) -> tuple[Any, ...]:
    return (*([_ALL] * dim), index, Ellipsis)


class _Kernels:
    """The kernels, allocating with one dispatcher's backends (user array types included)."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.d = dispatcher

    def movedim(self, x: Any, source: int, destination: int) -> Any:
        return permute(x, _order(len(x.shape), source, destination))

    def expand(self, x: Any, dim: int, size: int) -> Any:
        out = new_empty(x, _inserted(x.shape, dim, size), dispatcher=self.d)
        out[...] = x[_at(dim, None)]
        return out

    def sum_dim(self, x: Any, dim: int) -> Any:
        out = new_empty(x, _removed(x.shape, dim), dispatcher=self.d)
        out[...] = x.sum(dim)
        return out

    def select(self, x: Any, dim: int, index: int) -> Any:
        return x[_at(dim, index)]

    def select_backward(self, grad: Any, sizes: list[int], dim: int, index: int) -> Any:
        out = new_empty(grad, tuple(sizes), dispatcher=self.d)
        out[...] = 0
        out[_at(dim, index)] = grad
        return out

    def stack(self, tensors: list[Any], dim: int) -> Any:
        first = tensors[0]
        out = new_empty(first, _inserted(first.shape, dim, len(tensors)), dispatcher=self.d)
        for index, item in enumerate(tensors):
            out[_at(dim, index)] = item
        return out

    def merge(self, x: Any, dim: int, count: int) -> Any:
        return x.reshape(_merged(x.shape, dim, count))

    def split(self, x: Any, dim: int, sizes: list[int]) -> Any:
        return x.reshape(_split(x.shape, dim, list(sizes)))

    def narrow(self, x: Any, dim: int, start: int, length: int) -> Any:
        return x[_at(dim, slice(start, start + length))]

    def narrow_backward(self, grad: Any, sizes: list[int], dim: int, start: int) -> Any:
        out = new_empty(grad, tuple(sizes), dispatcher=self.d)
        out[...] = 0
        out[_at(dim, slice(start, start + grad.shape[dim]))] = grad
        return out

    def cat(self, tensors: list[Any], dim: int) -> Any:
        first = tensors[0]
        total = first.shape[dim]
        for item in tensors[1:]:
            total = total + item.shape[dim]
        shape = (*first.shape[:dim], total, *first.shape[dim + 1 :])
        out = new_empty(first, shape, dispatcher=self.d)
        start = 0
        for item in tensors:
            length = item.shape[dim]
            out[_at(dim, slice(start, start + length))] = item
            start = start + length
        return out


class _Fakes:
    """The fake impls: each result's shape from its arguments', symbolic sizes included."""

    @staticmethod
    def movedim(x: Any, source: int, destination: int) -> Any:
        order = _order(len(x.shape), source, destination)
        return new_empty(x, tuple(x.shape[i] for i in order))

    @staticmethod
    def expand(x: Any, dim: int, size: int) -> Any:
        return new_empty(x, _inserted(x.shape, dim, size))

    @staticmethod
    def sum_dim(x: Any, dim: int) -> Any:
        return new_empty(x, _removed(x.shape, dim))

    @staticmethod
    def select(x: Any, dim: int, index: int) -> Any:
        return new_empty(x, _removed(x.shape, dim))

    @staticmethod
    def select_backward(grad: Any, sizes: list[int], dim: int, index: int) -> Any:
        return new_empty(grad, tuple(sizes))

    @staticmethod
    def stack(tensors: list[Any], dim: int) -> Any:
        return new_empty(tensors[0], _inserted(tensors[0].shape, dim, len(tensors)))

    @staticmethod
    def merge(x: Any, dim: int, count: int) -> Any:
        return new_empty(x, _merged(x.shape, dim, count))

    @staticmethod
    def split(x: Any, dim: int, sizes: list[int]) -> Any:
        return new_empty(x, _split(x.shape, dim, list(sizes)))

    @staticmethod
    def narrow(x: Any, dim: int, start: int, length: int) -> Any:
        return new_empty(x, (*x.shape[:dim], length, *x.shape[dim + 1 :]))

    @staticmethod
    def narrow_backward(grad: Any, sizes: list[int], dim: int, start: int) -> Any:
        return new_empty(grad, tuple(sizes))

    @staticmethod
    def cat(tensors: list[Any], dim: int) -> Any:
        first = tensors[0]
        total = first.shape[dim]
        for item in tensors[1:]:
            total = total + item.shape[dim]
        return new_empty(first, (*first.shape[:dim], total, *first.shape[dim + 1 :]))


#: Each move: its schema (without the namespace) and the names of the inputs its
#: formula keeps (in ``ctx``), by position.
_SCHEMAS: Final = {
    "movedim": "(Tensor(a) x, int source, int destination) -> Tensor(a)",
    "expand": "(Tensor x, int dim, SymInt size) -> Tensor",
    "sum_dim": "(Tensor x, int dim) -> Tensor",
    "select": "(Tensor(a) x, int dim, SymInt index) -> Tensor(a)",
    "select_backward": "(Tensor grad, SymInt[] sizes, int dim, SymInt index) -> Tensor",
    "stack": "(Tensor[] tensors, int dim) -> Tensor",
    "merge": "(Tensor x, int dim, int count) -> Tensor",
    "split": "(Tensor x, int dim, SymInt[] sizes) -> Tensor",
    "narrow": "(Tensor(a) x, int dim, SymInt start, SymInt length) -> Tensor(a)",
    "narrow_backward": "(Tensor grad, SymInt[] sizes, int dim, SymInt start) -> Tensor",
    "cat": "(Tensor[] tensors, int dim) -> Tensor",
}


def _keep_inputs(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.inputs = tuple(getattr(v, "shape", v) if i == 0 else v for i, v in enumerate(inputs))


def _shapes(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.shapes = [item.shape for item in inputs[0]]
    ctx.dim = inputs[1]


class Moves:
    """The ``vmap::`` ops of one dispatcher, defined on first use, with their formulas."""

    __slots__ = tuple(_SCHEMAS)

    movedim: OperatorHandle
    expand: OperatorHandle
    sum_dim: OperatorHandle
    select: OperatorHandle
    select_backward: OperatorHandle
    stack: OperatorHandle
    merge: OperatorHandle
    split: OperatorHandle
    narrow: OperatorHandle
    narrow_backward: OperatorHandle
    cat: OperatorHandle

    def __init__(self, dispatcher: Dispatcher) -> None:
        kernels = _Kernels(dispatcher)
        for name, schema in _SCHEMAS.items():
            setattr(self, name, _define(dispatcher, name, schema, kernels))
        for name, (backward, setup) in self._formulas().items():
            op = getattr(self, name)
            if formula_of(op) is None:  # defined by an earlier Moves of this dispatcher
                register_autograd(op, backward, setup_context=setup)

    def _formulas(self) -> dict[str, tuple[Callable[..., Any], Callable[..., Any]]]:
        def movedim(ctx: Any, g: Any) -> Any:
            _, source, destination = ctx.inputs
            return self.movedim(g, destination, source), None, None

        def expand(ctx: Any, g: Any) -> Any:
            return self.sum_dim(g, ctx.inputs[1]), None, None

        def sum_dim(ctx: Any, g: Any) -> Any:
            shape, dim = ctx.inputs
            return self.expand(g, dim, shape[dim]), None

        def select(ctx: Any, g: Any) -> Any:
            shape, dim, index = ctx.inputs
            return self.select_backward(g, list(shape), dim, index), None, None

        def select_backward(ctx: Any, g: Any) -> Any:
            _, _, dim, index = ctx.inputs
            return self.select(g, dim, index), None, None, None

        def stack(ctx: Any, g: Any) -> Any:
            return [self.select(g, ctx.dim, i) for i in range(len(ctx.shapes))], None

        def merge(ctx: Any, g: Any) -> Any:
            shape, dim, count = ctx.inputs
            return self.split(g, dim, list(shape[dim : dim + count])), None, None

        def split(ctx: Any, g: Any) -> Any:
            _, dim, sizes = ctx.inputs
            return self.merge(g, dim, len(sizes)), None, None

        def narrow(ctx: Any, g: Any) -> Any:
            shape, dim, start, _ = ctx.inputs
            return self.narrow_backward(g, list(shape), dim, start), None, None, None

        def narrow_backward(ctx: Any, g: Any) -> Any:
            shape, _, dim, start = ctx.inputs
            return self.narrow(g, dim, start, shape[dim]), None, None, None

        def cat(ctx: Any, g: Any) -> Any:
            grads, start = [], 0
            for shape in ctx.shapes:
                grads.append(self.narrow(g, ctx.dim, start, shape[ctx.dim]))
                start = start + shape[ctx.dim]
            return grads, None

        found: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {}
        for backward in (movedim, expand, sum_dim, select, select_backward, merge, split):
            found[backward.__name__] = (backward, _keep_inputs)
        found["narrow"] = (narrow, _keep_inputs)
        found["narrow_backward"] = (narrow_backward, _keep_inputs)
        found["stack"] = (stack, _shapes)
        found["cat"] = (cat, _shapes)
        return found


#: The Moves of each dispatcher vmap is installed in (filled by `customop.vmap._install`).
MOVES: weakref.WeakKeyDictionary[Dispatcher, Moves] = weakref.WeakKeyDictionary()


def moves_of(dispatcher: Dispatcher) -> Moves:
    """The `Moves` of a dispatcher ``vmap`` is installed in."""
    return MOVES[dispatcher]


def _define(dispatcher: Dispatcher, name: str, schema: str, kernels: _Kernels) -> OperatorHandle:
    qualified = f"vmap::{name}"
    found = dispatcher.find_op(qualified)
    if found is not None and found.has_schema:
        return found
    table: dict[DispatchKey | str, Any] = {
        DispatchKey.CompositeExplicitAutograd: getattr(kernels, name),
        DispatchKey.Fake: getattr(_Fakes, name),
    }
    dispatcher.register_def(qualified + schema, source=_SOURCE, kernels=table)
    return dispatcher.find_schema_or_throw(qualified)

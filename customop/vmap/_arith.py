"""Plain array code on batched values: exact where it can be, refused everywhere else.

Elementwise arithmetic (Python operators, numpy ufuncs called plainly,
torch functions whose aten op is tagged ``pointwise``) is exact on a batch:
each operand's batch dimensions go to the front, the example dimensions are
right-aligned as broadcasting aligns them (an unbatched operand broadcasts
against every example), and the backend's own operator computes all
examples at once. Basic indexing (ints, slices, ``None``, ``...``) is exact
too, after the batch dimensions. So a formula's ``backward`` written as
``grad * np.cos(x)`` (or ``grad * torch.sigmoid(x)``) runs inside
``vmap(grad(f))``.

Everything else (reductions, ``np.sum``, methods such as ``.reshape``,
conversion to a plain array, Python control flow on values, writes) would
compute on the whole batch as if it were one example, so it raises
`VmapError` naming what was called.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final, NoReturn

from customop.exceptions import VmapError

if TYPE_CHECKING:
    from customop.vmap._value import BatchedArray, Level

__all__ = ["Arithmetic", "permute", "refuse"]


def refuse(what: str, why: str, fix: str) -> NoReturn:
    """Raise the one `VmapError` shape: ``vmap: <what>. <why>. <fix>.``."""
    raise VmapError(f"vmap: {what}. {why}. {fix}.")


_MIXES: Final = "Computed on the physical array, it would mix the examples of the batch"
_USE_OPS: Final = "Use a customop op (with a vmap rule) for it, or compute it outside vmap"


def permute(x: Any, order: list[int]) -> Any:
    """``x`` with its dimensions in ``order``: torch's ``permute``, else ``transpose``."""
    if order == list(range(len(order))):
        return x
    by_permute = getattr(x, "permute", None)
    if by_permute is not None:
        return by_permute(*order)
    return x.transpose(tuple(order))


def _front(value: BatchedArray, levels: list[Level], ndim: int) -> Any:
    """``value``'s array with ``levels``' dimensions first (size 1 where it has none),
    then its example dimensions right-aligned to ``ndim`` (leading size-1 dimensions)."""
    physical = value.value
    rest = [i for i in range(len(physical.shape)) if i not in value.dims]
    own = dict(zip(value.levels, value.dims, strict=True))
    moved = permute(physical, [own[level] for level in levels if level in own] + rest)
    sizes = list(moved.shape)
    front = [sizes.pop(0) if level in own else 1 for level in levels]
    shape = (*front, *([1] * (ndim - len(sizes))), *sizes)
    return moved if shape == tuple(moved.shape) else moved.reshape(shape)


def _levels(values: tuple[Any, ...], kind: type) -> list[Level]:
    batched: list[Any] = [v for v in values if type(v) is kind]
    found = {id(level): level for v in batched for level in v.levels}
    return sorted(found.values(), key=lambda level: level.index)


def elementwise(fn: Callable[..., Any], operands: tuple[Any, ...], kind: type) -> Any:
    """``fn`` on the physical arrays of ``operands``, batch dimensions first and aligned."""
    levels = _levels(operands, kind)
    ndim = max((len(getattr(o, "shape", ())) for o in operands), default=0)
    physical = [_front(o, levels, ndim) if type(o) is kind else o for o in operands]  # type: ignore[arg-type]
    result = fn(*physical)
    dims = tuple(range(len(levels)))
    if isinstance(result, tuple):
        return tuple(kind(item, tuple(levels), dims) for item in result)
    return kind(result, tuple(levels), dims)


_POINTWISE: dict[Any, bool] = {}


def _torch_pointwise(func: Any) -> bool:
    """Whether a torch function is the aten op of its name, tagged pointwise (any of the
    functional overloads: ``aten::mul.Tensor``, ``aten::exp.default``)."""
    found = _POINTWISE.get(func)
    if found is None:
        torch = sys.modules["torch"]  # a torch function was called: torch is imported
        name = getattr(func, "__name__", "").strip("_")
        packet = getattr(torch.ops.aten, name, None) if name else None
        names = [] if packet is None else [o for o in packet.overloads() if "out" not in o]
        found = any(torch.Tag.pointwise in getattr(packet, o).tags for o in names)
        if len(_POINTWISE) < 4096:
            _POINTWISE[func] = found
    return found


def _binary(fn: Callable[[Any, Any], Any], reflected: bool = False) -> Callable[..., Any]:
    def method(self: Arithmetic, other: Any) -> Any:
        pair = (other, self) if reflected else (self, other)
        return elementwise(fn, pair, type(self))

    return method


def _unary(fn: Callable[[Any], Any]) -> Callable[..., Any]:
    def method(self: Arithmetic) -> Any:
        return elementwise(fn, (self,), type(self))

    return method


def _basic_index(index: object) -> tuple[Any, ...]:
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        plain = item is None or item is Ellipsis or isinstance(item, slice)
        if not plain and not (isinstance(item, int) and not isinstance(item, bool)):
            refuse(
                f"indexing a batched value with {type(item).__name__} {item!r:.60}",
                "Only basic indices (ints, slices, None, ...) select the same elements of "
                "every example",
                "Index with those, or write the gather as a customop op with a vmap rule",
            )
    return items


class Arithmetic:
    """Elementwise operators, basic indexing, and clear refusals for the rest."""

    __slots__ = ()

    if TYPE_CHECKING:
        value: Any
        levels: tuple[Level, ...]
        dims: tuple[int, ...]
        shape: tuple[Any, ...]

        def __init__(self, value: Any, levels: tuple[Level, ...], dims: tuple[int, ...]) -> None:
            pass

    __add__ = _binary(lambda a, b: a + b)
    __radd__ = _binary(lambda a, b: a + b, reflected=True)
    __sub__ = _binary(lambda a, b: a - b)
    __rsub__ = _binary(lambda a, b: a - b, reflected=True)
    __mul__ = _binary(lambda a, b: a * b)
    __rmul__ = _binary(lambda a, b: a * b, reflected=True)
    __truediv__ = _binary(lambda a, b: a / b)
    __rtruediv__ = _binary(lambda a, b: a / b, reflected=True)
    __floordiv__ = _binary(lambda a, b: a // b)
    __rfloordiv__ = _binary(lambda a, b: a // b, reflected=True)
    __mod__ = _binary(lambda a, b: a % b)
    __rmod__ = _binary(lambda a, b: a % b, reflected=True)
    __pow__ = _binary(lambda a, b: a**b)
    __rpow__ = _binary(lambda a, b: a**b, reflected=True)
    __and__ = _binary(lambda a, b: a & b)
    __rand__ = _binary(lambda a, b: a & b, reflected=True)
    __or__ = _binary(lambda a, b: a | b)
    __ror__ = _binary(lambda a, b: a | b, reflected=True)
    __xor__ = _binary(lambda a, b: a ^ b)
    __rxor__ = _binary(lambda a, b: a ^ b, reflected=True)
    __lt__ = _binary(lambda a, b: a < b)
    __le__ = _binary(lambda a, b: a <= b)
    __gt__ = _binary(lambda a, b: a > b)
    __ge__ = _binary(lambda a, b: a >= b)
    __eq__ = _binary(lambda a, b: a == b)
    __ne__ = _binary(lambda a, b: a != b)
    __neg__ = _unary(lambda a: -a)
    __pos__ = _unary(lambda a: +a)
    __abs__ = _unary(abs)
    __invert__ = _unary(lambda a: ~a)
    __hash__ = None  # type: ignore[assignment]  # elementwise ==, as arrays

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = getattr(ufunc, "__name__", repr(ufunc))
        if method != "__call__" or "out" in kwargs or "where" in kwargs:
            shown = name if method == "__call__" else f"{name}.{method}"
            refuse(
                f"numpy's {shown} on a batched value"
                + (" with out= or where=" if method == "__call__" else ""),
                f"{_MIXES} (only a plain elementwise call is batched exactly)",
                _USE_OPS,
            )
        return elementwise(lambda *arrays: ufunc(*arrays, **kwargs), inputs, type(self))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        name = getattr(func, "__name__", repr(func))
        refuse(f"numpy.{name} on a batched value", _MIXES, _USE_OPS)

    def __array__(self, *args: Any, **kwargs: Any) -> NoReturn:
        refuse("converting a batched value to a plain array", _MIXES, _USE_OPS)

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = getattr(func, "__name__", repr(func))
        kwargs = kwargs or {}
        if "out" in kwargs or not _torch_pointwise(func):
            refuse(
                f"torch.{name} on a batched value",
                f"{_MIXES} (only pointwise torch functions are batched exactly)",
                _USE_OPS,
            )
        return elementwise(lambda *arrays: func(*arrays, **kwargs), tuple(args), cls)

    def __getitem__(self, index: object) -> Any:
        items = _basic_index(index)
        kind = type(self)
        levels = list(self.levels)
        physical = _front(self, levels, len(self.shape))  # type: ignore[arg-type]
        result = physical[(*([slice(None)] * len(levels)), *items)]
        return kind(result, tuple(levels), tuple(range(len(levels))))

    def __iter__(self) -> Iterator[Any]:
        if not self.shape:
            raise TypeError("iteration over a 0-d batched value: an example has no dimension")
        return (self[i] for i in range(int(self.shape[0])))

    def __setitem__(self, index: object, value: object) -> NoReturn:
        refuse(
            "writing into a batched value",
            "A write into the physical array may land in other examples or a copy",
            "Return a new value from a customop op (a mutating op with a vmap rule writes exactly)",
        )

    def _scalar(self, kind: str) -> NoReturn:
        refuse(
            f"{kind}() of a batched value",
            "Each example has its own value, so one Python value cannot stand for them (a "
            "branch on it would take one path for the whole batch)",
            "Keep it an array and select with an op, or compute it outside vmap",
        )

    def __bool__(self) -> bool:
        return self._scalar("bool")

    def __int__(self) -> int:
        return self._scalar("int")

    def __float__(self) -> float:
        return self._scalar("float")

    def __index__(self) -> int:
        return self._scalar("index")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # protocol probes (__array_interface__, ...): absent
        raise AttributeError(
            f"vmap: a batched value has no attribute {name!r}: inside vmap an array method "
            f"would compute on the whole batch. {_USE_OPS}."
        )

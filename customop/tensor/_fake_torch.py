"""torch's functions on fakes: ``FakeTensor.__torch_function__``, without importing torch.

torch hands any call with an argument that defines ``__torch_function__`` to
that argument's type, so a fake impl written for torch works on customop's
fakes: ``torch.cat([x, y])``, ``torch.empty_like(x, dtype=torch.int64)``,
``torch.tensor_split(x, 3)``, ``torch.sin(x)``, ``F.silu(x)`` each give a fake
of torch's result metadata. customop's `dtype`, `Device` and `SymInt` define
it too, so ``torch.empty(x.shape[0], s, dtype=x.dtype, device=x.device)`` in a
fake impl gives a fake (symbolic sizes kept), and outside any fake mode the
same call with concrete sizes runs torch's function with torch's dtype and
device. A function customop cannot fake raises a `TypeError` naming it.

torch passes the function object; this module reads only its ``__name__``
(torch's functions and ``torch.nn.functional``'s), so customop never imports
torch.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, NoReturn

from customop.symbolic import IntLike, SymInt
from customop.tensor._check import check
from customop.tensor._ctx import in_fake_impl
from customop.tensor._device import Device, to_device
from customop.tensor._dtype import DTYPES, dtype, to_dtype
from customop.tensor._factory import CURRENT_FAKE_MODE
from customop.tensor._fake import FakeTensor, to_shape
from customop.tensor._fake_meta import BINARY, UNARY, broadcast_shapes, metadata_of
from customop.tensor._fake_reduce import REDUCTIONS, matmul_shape
from customop.tensor._promote import result_type

__all__ = ["torch_function"]

#: torch's functions that are a fake's method of the same name (torch.sin(x) is x.sin()).
_METHODS: Final = frozenset(
    {*UNARY, *REDUCTIONS, "clone", "detach", "reshape", "flatten", "transpose", "permute",
     "squeeze", "unsqueeze", "narrow", "select", "split", "chunk", "tensor_split", "unbind",
     "t", "max", "min", "softmax", "log_softmax", "cumsum", "cumprod", "matmul", "mm", "bmm",
     "expand", "view", "contiguous", "to", "new_empty", "new_zeros", "new_ones"}
)  # fmt: skip
_FACTORIES: Final = frozenset({"empty", "zeros", "ones", "full", "rand", "randn"})
_LIKE: Final = frozenset(
    {"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like"}
)


def torch_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> Any:
    """What torch's ``func(*args, **kwargs)`` gives when customop objects are among them."""
    kwargs = {} if kwargs is None else kwargs
    name = getattr(func, "__name__", "")
    special = _SPECIAL.get(name)
    if special is not None:
        return special(func, args, kwargs)
    if not args and isinstance(kwargs.get("input"), FakeTensor):  # torch.sin(input=x)
        args, kwargs = (kwargs["input"],), {k: v for k, v in kwargs.items() if k != "input"}
    fake = next((a for a in args if isinstance(a, FakeTensor)), None)
    if fake is None:
        if _holds_fakes((*args, *kwargs.values())):
            _unsupported(name, func)  # torch's own function would call us back: no way out
        return _without_fakes(func, name, args, kwargs)
    if name in BINARY and len(args) >= 2 and args[0] is not fake:
        return fake._binary(name, args[0], reverse=True)
    if name in _METHODS or name in BINARY:
        position = args.index(fake)
        return getattr(fake, name)(*args[position + 1 :], **kwargs)
    _unsupported(name, func)


def _holds_fakes(values: tuple[Any, ...]) -> bool:
    for value in values:
        items = value if isinstance(value, list | tuple) else (value,)
        if any(isinstance(item, FakeTensor) for item in items):
            return True
    return False


def _unsupported(name: str, func: object) -> NoReturn:
    module = getattr(func, "__module__", None) or "torch"
    raise TypeError(
        f"FakeTensor: {module}.{name} is not supported on customop fakes. A fake has only "
        "shape, dtype, device and strides; customop fakes torch's metadata functions (cat, "
        "stack, tensor_split, empty_like, sum, sin, +, *, matmul, reshape, transpose, to, "
        "...). Compute the output's shape and make it with x.new_empty(shape) or "
        "torch.empty_like(x), or use customop.get_ctx().new_dynamic_size() for a "
        "data-dependent size."
    )


def _result(shape: tuple[IntLike, ...], kind: dtype, device: Device) -> Any:
    mode = CURRENT_FAKE_MODE.get()
    if mode is not None:
        return mode.make_fake(shape, kind, device)
    return FakeTensor._new(shape, kind, device)


def _tensors(values: Sequence[Any], api: str) -> list[tuple[tuple[IntLike, ...], dtype, Device]]:
    found = []
    for value in values:
        meta = metadata_of(value)
        if meta is None:
            raise TypeError(
                f"FakeTensor: torch.{api} got {value!r:.60}, not a tensor. It joins tensors. "
                "Pass a sequence of fakes or arrays."
            )
        found.append(meta)
    return found


def _cat(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    tensors = args[0] if args else kwargs["tensors"]
    dim = kwargs.get("dim", args[1] if len(args) > 1 else 0)
    # torch skips legacy empty 1-d tensors of shape (0,) when joining.
    metas = [m for m in _tensors(tensors, "cat") if m[0] != (0,)] or _tensors(tensors, "cat")
    first = metas[0][0]
    axis = _axis(dim, len(first), "cat")
    total: IntLike = 0
    for shape, _, _ in metas:
        if len(shape) != len(first):
            raise ValueError(
                f"FakeTensor: torch.cat got shapes {[m[0] for m in metas]!r} with different "
                "numbers of dimensions. torch.cat joins tensors of one rank. Fix the shapes."
            )
        for i, (a, b) in enumerate(zip(shape, first, strict=True)):
            if i != axis:
                check(a == b)
        total = total + shape[axis]
    operands = tuple((t, m[1], len(m[0])) for t, m in zip(tensors, metas, strict=False))
    return _result((*first[:axis], total, *first[axis + 1 :]), result_type(operands), metas[0][2])


def _stack(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    tensors = args[0] if args else kwargs["tensors"]
    dim = kwargs.get("dim", args[1] if len(args) > 1 else 0)
    metas = _tensors(tensors, "stack")
    shape = metas[0][0]
    for other, _, _ in metas[1:]:
        for a, b in zip(shape, other, strict=True):
            check(a == b)
    axis = _axis(dim, len(shape) + 1, "stack")
    operands = tuple((t, m[1], len(m[0])) for t, m in zip(tensors, metas, strict=True))
    kind = result_type(operands)
    return _result((*shape[:axis], len(metas), *shape[axis:]), kind, metas[0][2])


def _axis(dim: Any, ndim: int, api: str) -> int:
    if not isinstance(dim, int) or not -ndim <= dim < max(ndim, 1):
        raise IndexError(
            f"FakeTensor: torch.{api} dim {dim!r} is out of range for {ndim} dimensions. "
            f"Dimensions count from 0, or from -1 at the end. Pass an int in [-{ndim}, {ndim})."
        )
    return dim % max(ndim, 1)


def _where(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if len(args) == 1:
        _unsupported("where (one argument: data-dependent)", func)
    cond, x, y = args
    metas = [metadata_of(value) for value in (cond, x, y)]
    shape = broadcast_shapes(*(m[0] for m in metas if m is not None))
    operands = tuple((v, None if m is None else m[1], 0 if m is None else len(m[0]))
                     for v, m in zip((x, y), metas[1:], strict=True))  # fmt: skip
    device = next(m[2] for m in metas if m is not None)
    return _result(shape, result_type(operands), device)


def _linear(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    x, weight = args[0], args[1] if len(args) > 1 else kwargs["weight"]
    metas = [metadata_of(x), metadata_of(weight)]
    if metas[0] is None or metas[1] is None:
        _unsupported("linear (a non-tensor input or weight)", func)
    shape = matmul_shape(metas[0][0], tuple(reversed(metas[1][0])))
    operands = ((x, metas[0][1], len(metas[0][0])), (weight, metas[1][1], len(metas[1][0])))
    return _result(shape, result_type(operands), metas[0][2])


def _like(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    x = args[0] if args else kwargs["input"]
    meta = metadata_of(x)
    if meta is None:
        _unsupported(func.__name__, func)
    shape, kind, device = meta
    kind = kind if kwargs.get("dtype") is None else to_dtype(kwargs["dtype"], api="FakeTensor")
    device = device if kwargs.get("device") is None else to_device(kwargs["device"])
    if isinstance(x, FakeTensor):  # torch's preserve_format: x's layout, made dense
        keep = not str(kwargs.get("memory_format")).endswith("contiguous_format")
        return x._like(kind, device, keep=keep)
    return _result(shape, kind, device)


def _factory(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """torch.empty(sizes, dtype=, device=) (and zeros, ones, full, rand, randn) with customop
    arguments: a fake in a fake mode or for symbolic sizes, else torch's own tensor."""
    name = func.__name__
    sizes: Any = args[0] if len(args) == 1 or name == "full" else args
    shape = to_shape(sizes, api=f"torch.{name}")
    fake = CURRENT_FAKE_MODE.get() is not None or any(isinstance(s, SymInt) for s in shape)
    if not fake and not in_fake_impl():  # a kernel's call: torch's own tensor
        return func(*_to_torch(args), **{k: _to_torch(v) for k, v in kwargs.items()})
    kind = kwargs.get("dtype")
    device = kwargs.get("device")
    return _result(
        shape,
        DTYPES["float32"] if kind is None else to_dtype(kind, api=f"torch.{name}"),
        to_device("cpu" if device is None else device),
    )


def _to_torch(value: Any) -> Any:
    """customop's dtypes, devices and layout in torch's spelling (torch is imported: it
    called us)."""
    if isinstance(value, dtype):
        return value.to_torch()
    if isinstance(value, Device):
        return sys.modules["torch"].device(str(value))
    if isinstance(value, str) and value == "strided":  # a fake's .layout
        return sys.modules["torch"].strided
    if isinstance(value, tuple | list):
        return type(value)(_to_torch(item) for item in value)
    return value


def _without_fakes(func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A call with customop dtypes, devices or SymInts but no fake: fake or convert."""
    if name in _FACTORIES:
        return _factory(func, args, kwargs)
    if any(isinstance(v, SymInt) for v in (*args, *kwargs.values())):
        _unsupported(name, func)
    return func(*_to_torch(args), **{key: _to_torch(v) for key, v in kwargs.items()})


_Special = Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]
_SPECIAL: Final[dict[str, _Special]] = {
    "cat": _cat, "concat": _cat, "concatenate": _cat, "stack": _stack, "where": _where,
    "linear": _linear, **dict.fromkeys(_LIKE, _like),
}  # fmt: skip

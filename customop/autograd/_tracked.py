"""`Tracked`: what a transform hands ``fn`` in place of each array whose gradient it follows.

NOTE: why a wrapper. The tape follows values by identity, so a value that plain
code makes from a tracked one (``x * 2``, ``np.sin(x)``, ``x.T``) is a new array the
tape does not know; passed to an op it would count as a constant, and the
gradient would be silently wrong. JAX and torch avoid that by owning the array
type; customop keeps every backend's own arrays, so it hands ``fn`` a thin
wrapper around each tracked array instead. Everything plain code can do with it
goes through the wrapper: operators, numpy's ufunc and function protocols
(``__array_ufunc__``, ``__array_function__``), methods and attributes (by
``__getattr__``), indexing, iteration, copies and conversions. A result that
could carry a gradient comes back as a *derived* wrapper (it remembers how it
was made), which an op or the transform refuses, naming the op and the step;
anything that would leave the array world (``np.asarray(x)``, ``float(x)``,
``x.item()``) or change a tracked array in place is refused where it happens.
What cannot carry a gradient (shapes, dtypes, comparisons, masks, integer
results) comes back plain, so control flow and shape code work.

Kernels never see a wrapper: the autograd kernels (see `_engine`) unwrap the
arguments before computing below the Autograd keys. Wrappers exist only while a
transform records; outside one (a formula's backward at the top level, a value
kept past the transform) every operation gives plain results, as the array
inside would.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import Any, Final, NoReturn

from customop.autograd._tape import ACTIVE, differentiable
from customop.exceptions import AutogradError
from customop.tensor import FakeTensor

__all__ = [
    "NUMPY_ARRAY",
    "Tracked",
    "TrackedArray",
    "derive",
    "made_by",
    "unwrap",
    "unwrap_all",
    "wrap",
]


def _recording_api() -> str | None:
    """The innermost recording transform's name (``grad``, ``vjp``), or None."""
    tapes = ACTIVE.get()
    return tapes[-1].api if tapes else None


def _refuse(what: str, why: str, fix: str) -> NoReturn:
    api = _recording_api() or "grad"
    raise AutogradError(f"{api}: {what} on a value {api} tracks {why}. {fix}")


class Tracked:
    """An array a transform is recording, or one plain code made from it (``made``)."""

    __slots__ = ("_made", "_raw")
    # numpy hands binary operators with a plain array (``ndarray * tracked``) to us.
    __array_priority__ = 1e6
    __hash__ = object.__hash__  # by identity, as tapes track values

    def __init__(self, raw: Any, made: str | None = None) -> None:
        self._raw = raw
        self._made = made

    @property
    def shape(self) -> Any:
        """The array's shape."""
        return self._raw.shape

    @property
    def dtype(self) -> Any:
        """The array's dtype."""
        return self._raw.dtype

    @property
    def ndim(self) -> int:
        """The array's number of dimensions."""
        return int(self._raw.ndim)

    def __len__(self) -> int:
        return len(self._raw)

    def __bool__(self) -> bool:
        return bool(self._raw)  # control flow does not change a derivative

    def __repr__(self) -> str:
        made = "" if self._made is None else f", made by {self._made}"
        return f"Tracked({self._raw!r}{made})"

    def __str__(self) -> str:
        return str(self._raw)

    def __format__(self, spec: str) -> str:
        return format(self._raw, spec)

    # -- numpy's protocols ------------------------------------------------------------

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        if _recording_api() is not None:
            _refuse(
                "numpy.asarray or numpy.array",
                "would give a plain array, which carries no gradient",
                "Compute with ops, or with numpy functions on the value itself "
                "(np.sin(x), not np.sin(np.asarray(x))), and make the result an op's input "
                "only through an op.",
            )
        import numpy as np  # noqa: PLC0415 -- numpy asked: it is loaded

        return np.asarray(self._raw, dtype=dtype)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        kwargs = _unwrap_out(kwargs, name)
        result = getattr(ufunc, method)(*unwrap_all(inputs), **unwrap_all(kwargs))
        return derive(result, name)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        name = f"numpy.{func.__name__}"
        kwargs = _unwrap_out(kwargs, name)
        result = func(*unwrap_all(args), **unwrap_all(kwargs))
        if func.__name__ in _CONSTANT_FUNCTIONS and not _any_tracked(args[1:], kwargs):
            return result  # np.zeros_like(x): a constant, whatever x holds
        return derive(result, name)

    @classmethod
    def __torch_function__(
        cls, func: Any, types: Any, args: Any = (), kwargs: Any = None
    ) -> Any:  # torch's protocol for non-tensor arguments (torch.sin(x))
        name = f"torch.{getattr(func, '__name__', func)}"
        kwargs = _unwrap_out(kwargs or {}, name)
        if name.endswith("_") and _recording_api() is not None:
            _refuse_in_place(f"{name}()")
        return derive(func(*unwrap_all(args), **unwrap_all(kwargs)), name)

    # -- Python's protocols -------------------------------------------------------------

    def __getitem__(self, index: Any) -> Any:
        return derive(self._raw[unwrap_all(index)], "indexing")

    def __setitem__(self, index: Any, value: Any) -> None:
        if _recording_api() is not None:
            _refuse_in_place("x[...] = value")
        self._raw[unwrap_all(index)] = unwrap_all(value)

    def __iter__(self) -> Iterator[Any]:
        return (derive(item, "iterating") for item in self._raw)

    def __getattr__(self, name: str) -> Any:
        # Protocol probes (__array_interface__, __dlpack__, ...) must fail, so that a
        # consumer falls back to __array__, which says what is wrong.
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._raw, name)
        method = callable(value) and not isinstance(value, type)
        if _recording_api() is not None:
            shown = f".{name}()" if method else f".{name}"
            if name in _READS_DATA:
                _refuse_plain(shown)
            if name in _IN_PLACE or (name.endswith("_") and not name.startswith("_")):
                _refuse_in_place(shown)
        return _Method(value, name) if method else derive(value, f".{name}")

    def __copy__(self) -> Any:
        return derive(self._raw.copy(), "copy.copy")

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return derive(self._raw.copy(), "copy.deepcopy")

    def __reduce_ex__(self, protocol: Any) -> Any:
        if _recording_api() is not None:
            _refuse_plain("pickle.dumps()")
        return self._raw.__reduce_ex__(protocol)

    def __float__(self) -> float:
        return float(self._number("float()"))

    def __int__(self) -> int:
        return int(self._number("int()"))

    def __complex__(self) -> complex:
        return complex(self._number("complex()"))

    def __index__(self) -> int:
        return operator.index(self._number("operator.index()"))

    def _number(self, what: str) -> Any:
        if _recording_api() is not None:
            _refuse_plain(what)
        return self._raw


class TrackedArray(Tracked):
    """A `Tracked` numpy array: dispatches as numpy does (CPU), with no per-call lookup."""

    __slots__ = ()


def _refuse_plain(what: str) -> NoReturn:
    _refuse(
        what,
        "gives a plain number or buffer, which carries no gradient, so anything computed "
        "from it would be a constant",
        "Compute with ops (a comparison such as x > 0 works in control flow), or read the "
        "value after the transform returns (value_and_grad gives the value).",
    )


def _refuse_in_place(what: str) -> NoReturn:
    _refuse(
        what,
        "would change it in place, after ops recorded it as it was, so the gradient would be wrong",
        "Make a new value with an op instead of changing this one.",
    )


class _Method:
    """A tracked array's method: called on the array inside, its result derived."""

    __slots__ = ("fn", "name")

    def __init__(self, fn: Callable[..., Any], name: str) -> None:
        self.fn = fn
        self.name = name

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        name = f".{self.name}()"
        kwargs = _unwrap_out(kwargs, name)
        if self.name == "view" and (args or kwargs) and _recording_api() is not None:
            _refuse(
                ".view() with a dtype",
                "reinterprets its bits, which has no derivative",
                "Use .astype() for a conversion, or view the array outside the transform.",
            )
        return derive(self.fn(*unwrap_all(args), **unwrap_all(kwargs)), name)


def _binary(fn: Callable[[Any, Any], Any], symbol: str, reflected: bool) -> Callable[..., Any]:
    how = f"the {symbol} operator"

    def method(self: Tracked, other: Any) -> Any:
        other = unwrap(other)
        result = fn(other, self._raw) if reflected else fn(self._raw, other)
        return derive(result, how)

    return method


def _unary(fn: Callable[[Any], Any], how: str) -> Callable[..., Any]:
    def method(self: Tracked) -> Any:
        return derive(fn(self._raw), how)

    return method


# The operators, as data: (name, function, symbol). Comparisons give bool arrays,
# which `derive` returns plain. In-place operators are left out on purpose: Python
# then runs ``y = y + 1`` for ``y += 1``, a new (derived) value, never a change.
_BINARY: Final = (
    ("add", operator.add, "+"),
    ("sub", operator.sub, "-"),
    ("mul", operator.mul, "*"),
    ("truediv", operator.truediv, "/"),
    ("floordiv", operator.floordiv, "//"),
    ("mod", operator.mod, "%"),
    ("pow", operator.pow, "**"),
    ("matmul", operator.matmul, "@"),
    ("and", operator.and_, "&"),
    ("or", operator.or_, "|"),
    ("xor", operator.xor, "^"),
    ("lshift", operator.lshift, "<<"),
    ("rshift", operator.rshift, ">>"),
    ("divmod", divmod, "divmod()"),
)
_COMPARISONS: Final = (
    ("lt", operator.lt, "<"),
    ("le", operator.le, "<="),
    ("gt", operator.gt, ">"),
    ("ge", operator.ge, ">="),
    ("eq", operator.eq, "=="),
    ("ne", operator.ne, "!="),
)
_UNARY: Final = (
    ("neg", operator.neg, "the unary - operator"),
    ("pos", operator.pos, "the unary + operator"),
    ("abs", abs, "abs()"),
    ("invert", operator.invert, "the ~ operator"),
)
for _name, _fn, _symbol in _BINARY:
    setattr(Tracked, f"__{_name}__", _binary(_fn, _symbol, reflected=False))
    setattr(Tracked, f"__r{_name}__", _binary(_fn, _symbol, reflected=True))
for _name, _fn, _symbol in _COMPARISONS:
    setattr(Tracked, f"__{_name}__", _binary(_fn, _symbol, reflected=False))
for _name, _fn1, _how in _UNARY:
    setattr(Tracked, f"__{_name}__", _unary(_fn1, _how))

#: Attributes that read the data out as plain Python or bytes (numpy's and torch's).
_READS_DATA: Final = frozenset(
    {"item", "tolist", "tobytes", "tostring", "tofile", "dump", "dumps", "data", "ctypes",
     "flat", "numpy", "untyped_storage", "data_ptr"}
)  # fmt: skip
#: numpy's methods that change the array in place (torch marks its own with a trailing ``_``).
_IN_PLACE: Final = frozenset(
    {"fill", "sort", "partition", "put", "resize", "itemset", "setfield", "setflags", "byteswap"}
)
#: numpy functions whose result depends only on the shape and dtype of their first argument.
_CONSTANT_FUNCTIONS: Final = frozenset({"zeros_like", "ones_like", "empty_like", "full_like"})


#: numpy's array type, once seen (customop does not import numpy itself).
NUMPY_ARRAY: Final[set[type]] = set()


def wrap(raw: Any, made: str | None = None) -> Tracked:
    """A new wrapper around ``raw`` (numpy arrays get the CPU-keyed class)."""
    kind = type(raw)
    if kind in NUMPY_ARRAY:
        return TrackedArray(raw, made)
    if kind.__name__ == "ndarray" and kind.__module__ == "numpy":
        NUMPY_ARRAY.add(kind)
        return TrackedArray(raw, made)
    return Tracked(raw, made)


def derive(result: Any, how: str) -> Any:
    """What plain code's ``result`` becomes: derived if it can carry a gradient and a
    transform records; plain otherwise (lists and tuples item by item)."""
    if not ACTIVE.get():
        return result
    kind = type(result)
    if kind is tuple or kind is list:
        return kind(derive(item, how) for item in result)
    if isinstance(result, FakeTensor) or not differentiable(result):
        return result
    return wrap(result, how)


def made_by(value: Any) -> str | None:
    """How plain code made ``value`` (a derived wrapper), else None."""
    return value._made if isinstance(value, Tracked) else None


def unwrap(value: Any) -> Any:
    """The array inside a wrapper; anything else as it is."""
    return value._raw if isinstance(value, Tracked) else value


def unwrap_all(value: Any) -> Any:
    """``value`` with every wrapper inside tuples, lists and dicts replaced by its array."""
    kind = type(value)
    if kind is tuple or kind is list:
        return kind(unwrap_all(item) for item in value)
    if kind is dict:
        return {key: unwrap_all(item) for key, item in value.items()}
    return value._raw if isinstance(value, Tracked) else value


def _any_tracked(args: Any, kwargs: dict[str, Any]) -> bool:
    return any(isinstance(a, Tracked) for a in args) or any(
        isinstance(v, Tracked) for v in kwargs.values()
    )


def _unwrap_out(kwargs: dict[str, Any], name: str) -> dict[str, Any]:
    """Refuse ``out=`` naming a tracked array while recording (it would change it in place)."""
    out = kwargs.get("out")
    items = out if isinstance(out, tuple) else (out,)
    if any(isinstance(item, Tracked) for item in items) and _recording_api() is not None:
        _refuse_in_place(f"{name}(..., out=...)")
    return kwargs

"""`FakeTensor`: a shape, a dtype and a device, with no data.

Fake impls compute output metadata from input metadata, so a FakeTensor is
all they see. Its sizes may be `SymInt`s (data-dependent sizes).

Dispatch keys (decided here, relied on by the fake and trace layers): every
FakeTensor carries ``Fake``, ``Meta`` and ``AutogradMeta``, whatever its
device. So:

* ``op(fake)`` runs the op's Fake entry (its fake impl, else its Meta kernel,
  else a CompositeImplicitAutograd decomposition) even outside a
  ``FakeTensorMode``: shape inference on fakes needs no mode;
* the key set is the same for every instance, so dispatch takes its fast path
  and the call caches keyed on argument types stay valid;
* a block that excludes ``Fake`` falls to the Meta kernel, never to a real
  device's kernel that would read data a fake does not have. This is torch's
  own layout: its FakeTensor wraps a meta tensor and reports the fake device.

The device is metadata for fake impls to propagate (`customop.empty_like`
does); which backend a kernel targets is decided by real arrays only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, NoReturn, TypeAlias, overload

from customop.symbolic import TORCH_FUNCTION, IntLike, SymInt, as_int, bounds, torch_function_hook
from customop.tensor._device import Device, DeviceLike, to_device
from customop.tensor._dtype import DTypeLike, dtype, float32, to_dtype
from customop.tensor._fake_data import FakeTensorData
from customop.tensor._fake_math import FakeTensorMath
from customop.tensor._fake_methods import FakeTensorMethods
from customop.tensor._fake_reduce import FakeTensorReduce

__all__ = ["FOREIGN_SIZES", "FakeTensor", "ShapeLike", "to_shape", "torch_function"]

#: What APIs taking a shape accept: one size, or an iterable of sizes (ints or SymInts).
ShapeLike: TypeAlias = IntLike | Iterable[IntLike]


class FakeTensor(FakeTensorMethods, FakeTensorMath, FakeTensorReduce, FakeTensorData):
    """An array without data: ``FakeTensor((s0, 3), customop.float32, "cuda:1")``.

    ``shape`` entries are ints >= 0 or `SymInt`s; ``dtype`` is anything
    `dtype.from_any` accepts (default float32, as in torch); ``device`` anything
    `Device` parses (default ``"cpu"``). It satisfies the `customop.Tensor`
    protocol, carries the dispatch keys described in this module's docstring,
    and refuses numpy conversion (it has no values to convert).

    Subclasses (the trace layer's tracer tensors) may add slots; a subclass
    dispatches with FakeTensor's keys unless it registers its own. The torch
    metadata methods fake impls call (``new_empty``, ``reshape``, ``x[:, None]``,
    ...) come from `FakeTensorMethods`; reading values or computing on a fake
    (``int(x[0])``, ``np.add(x, 1)``, ``x + 1``) raises, as `FakeTensorData` says.
    """

    # _strides is set only on a fake laid out otherwise than row-major: the fakes fake
    # impls make by the million never set it (see `stride`).
    __slots__ = ("_device", "_dtype", "_shape", "_strides")

    _device: Device
    _dtype: dtype
    _shape: tuple[IntLike, ...]
    _strides: tuple[IntLike, ...]

    def __init__(
        self, shape: ShapeLike, dtype: DTypeLike = float32, device: DeviceLike = "cpu"
    ) -> None:
        self._shape = to_shape(shape, api="FakeTensor")
        self._dtype = to_dtype(dtype, api="FakeTensor")
        self._device = to_device(device)

    @classmethod
    def _new(cls, shape: tuple[IntLike, ...], dtype: dtype, device: Device) -> FakeTensor:
        """A fake from metadata that is already checked (the factory helpers' fast path)."""
        fake = object.__new__(cls)
        fake._shape = shape
        fake._dtype = dtype
        fake._device = device
        return fake

    @property
    def shape(self) -> tuple[IntLike, ...]:
        """The sizes: ints and `SymInt`s."""
        return self._shape

    @property
    def dtype(self) -> dtype:
        """The element type, a customop `dtype` (``== numpy.float32`` works too)."""
        return self._dtype

    @property
    def device(self) -> Device:
        """The device the tensor claims to live on."""
        return self._device

    @property
    def ndim(self) -> int:
        """The number of dimensions, ``len(shape)``."""
        return len(self._shape)

    def dim(self) -> int:
        """Same as `ndim` (torch spelling).

        Returns:
            The number of dimensions.
        """
        return len(self._shape)

    @overload
    def size(self, dim: None = None) -> tuple[IntLike, ...]: ...

    @overload
    def size(self, dim: int) -> IntLike: ...

    def size(self, dim: int | None = None) -> tuple[IntLike, ...] | IntLike:
        """The shape, or the size of dimension ``dim`` (negative counts from the end).

        Args:
            dim: a dimension, or ``None`` for the whole shape.

        Returns:
            The shape tuple, or one size (an ``int`` or a `SymInt`).

        Raises:
            IndexError: ``dim`` is out of range.
        """
        if dim is None:
            return self._shape
        return self._shape[self._dim_index(dim, "FakeTensor.size")]

    def numel(self) -> IntLike:
        """The number of elements: the product of the sizes (a `SymInt` if any size is one).

        Returns:
            The element count, an ``int`` or a `SymInt`.
        """
        total: IntLike = 1
        for size in self._shape:
            total = total * size
        return total

    def _dim_index(self, dim: object, api: str) -> int:
        ndim = len(self._shape)
        index = as_int(dim)
        if index is None:
            raise TypeError(
                f"{api}: dim {dim!r} is not an int. A dimension is a position in the shape. "
                f"Pass an int in [-{ndim}, {ndim})."
            )
        if not -ndim <= index < ndim:
            raise IndexError(
                f"{api}: dim {dim} is out of range for a {ndim}-d tensor of shape "
                f"{self._shape!r}. Dimensions count from 0, or from -1 at the end. "
                f"Pass an int in [-{ndim}, {ndim})."
            )
        return index % ndim

    # torch's functions on fakes (torch.cat, torch.empty_like, ...): see
    # customop.tensor._fake_torch. torch calls in; customop never imports torch.
    __torch_function__ = torch_function_hook

    def __getattr__(self, name: str) -> Any:
        # Reached only for names the fake lacks: its unset _strides slot (a contiguous
        # fake), or a torch method customop does not fake, named in the error.
        if name == "_strides":
            return None
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(
            f"FakeTensor: Tensor.{name} is not supported on customop fakes. A fake has only "
            "shape, dtype, device and strides, and fakes torch's metadata methods (clone, view, "
            "reshape, transpose, expand, sum, sin, +, *, to, new_empty, ...). Compute the "
            "output's shape and make it with x.new_empty(shape), or use "
            "customop.get_ctx().new_dynamic_size() for a data-dependent size."
        )

    def __array__(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(
            f"FakeTensor: {self!r} has no data to convert to a numpy array. Fake tensors carry "
            "only shape, dtype and device, for fake impls that compute output metadata. Make "
            "outputs with customop.empty_like / new_empty instead of numpy functions."
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(shape={self._shape!r}, dtype={self._dtype}, "
            f"device={self._device})"
        )


#: Qualified names of other systems' symbolic sizes that a shape may hold as they
#: are: torch's SymInt, when a customop fake impl serves torch (``customop.torch``).
FOREIGN_SIZES: Final[frozenset[str]] = frozenset({"torch.SymInt"})


def to_shape(shape: object, *, api: str) -> tuple[IntLike, ...]:
    """``shape`` as a tuple of sizes: ints >= 0 (numpy ints become ints) and SymInts."""
    if type(shape) is tuple and all(type(size) is int and size >= 0 for size in shape):
        return shape  # the common case, checked in one pass
    if isinstance(shape, SymInt) or as_int(shape) is not None:
        items: Iterable[object] = (shape,)
    elif isinstance(shape, tuple | list) or (
        isinstance(shape, Iterable) and not isinstance(shape, str | bytes)
    ):
        items = shape
    else:
        _raise_bad_shape(api, shape)
    return tuple(_to_size(api, size, shape) for size in items)


def _to_size(api: str, size: object, shape: object) -> IntLike:
    if isinstance(size, SymInt):
        _, high = bounds(size._expr)
        if high < 0:
            raise ValueError(
                f"{api}: size {size} in shape {shape!r} is negative (its range ends at {high}). "
                "A dimension has a size >= 0. Check the size computation."
            )
        return size
    if f"{type(size).__module__}.{type(size).__qualname__}" in FOREIGN_SIZES:
        return size  # type: ignore[return-value]  # another system's SymInt, kept as it is
    number = as_int(size)
    if number is None:
        raise TypeError(
            f"{api}: size {size!r} in shape {shape!r} is not an int or SymInt. Every dimension "
            "has an integer size. Pass a tuple of ints and SymInts, such as (s0, 3)."
        )
    if number < 0:
        raise ValueError(
            f"{api}: size {size} in shape {shape!r} is negative. A dimension has a size >= 0. "
            "Pass sizes >= 0."
        )
    return number


def _raise_bad_shape(api: str, shape: object) -> NoReturn:
    raise TypeError(
        f"{api}: shape {shape!r} is not a size or a sequence of sizes. A shape lists each "
        "dimension's size. Pass a tuple of ints and SymInts, such as (s0, 3), or one int."
    )


def torch_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> Any:
    """torch's ``func`` on customop arguments (fakes, dtypes, devices, SymInts): see
    `customop.tensor._fake_torch`, loaded on the first such call."""
    from customop.tensor._fake_torch import torch_function as run  # noqa: PLC0415 -- imports this

    return run(func, args, kwargs)


TORCH_FUNCTION.append(torch_function)

"""``empty``, ``empty_like``, ``new_empty``: one fake impl serves fakes on every device.

A fake impl that returns ``customop.empty_like(x)`` gets a `FakeTensor` when
``x`` is fake and a real array of ``x``'s backend when it is real, so the same
function can also serve as a shape-correct allocator in real kernels. The rule,
checked in this order:

1. a fake mode is active (`CURRENT_FAKE_MODE` is set): the mode makes a fake;
2. the reference array is a `FakeTensor`, or a size is a `SymInt` (a real
   array needs concrete sizes), or ``empty`` is asked for the ``meta``
   device (which holds no data): a `FakeTensor`;
3. otherwise a real array: ``empty`` makes a numpy array on the cpu (on
   another device, an array of the most recently registered backend of that
   device type that has an ``empty`` function and whose package is imported:
   cupy for ``"cuda"``, a user backend for its renamed device type; torch
   tensors come from ``empty_like`` / ``new_empty`` of a torch tensor);
   ``empty_like`` / ``new_empty`` ask the reference array's backend adapter
   (numpy, torch, cupy or a user backend).

``dtype`` and ``device`` default to the reference array's (``empty``:
float32 on the cpu, as in torch).

The fake layer's ``FakeTensorMode`` sets `CURRENT_FAKE_MODE` while active
(``token = CURRENT_FAKE_MODE.set(mode)`` on enter, ``.reset(token)`` on exit)
and implements `FakeTensorFactory`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn, Protocol, TypeVar, overload

from customop.dispatch import Dispatcher
from customop.dispatch import dispatcher as default_dispatcher
from customop.symbolic import IntLike, SymInt
from customop.tensor._backends import (
    ArrayAdapter,
    adapter_for,
    adapter_table,
    numpy_empty,
)
from customop.tensor._device import Device, DeviceLike, to_device
from customop.tensor._dtype import DTypeLike, dtype, float32, to_dtype
from customop.tensor._fake import FakeTensor, ShapeLike, to_shape
from customop.tensor._fake_methods import check_layout
from customop.tensor._protocol import Tensor

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CURRENT_FAKE_MODE",
    "PLAIN_FAKE_FACTORIES",
    "FakeTensorFactory",
    "current_fake_mode",
    "empty",
    "empty_like",
    "new_empty",
]


class FakeTensorFactory(Protocol):
    """What a fake mode offers the factory helpers: making its fakes."""

    def make_fake(self, shape: tuple[IntLike, ...], dtype: dtype, device: Device) -> FakeTensor:
        """A fake with this metadata (the mode may attach itself, count, memoise...).

        Args:
            shape: the sizes.
            dtype: the element type.
            device: the device.

        Returns:
            The fake.
        """
        ...


#: The active fake mode of this thread / asyncio task, or None. Set by the fake layer.
CURRENT_FAKE_MODE: Final[ContextVar[FakeTensorFactory | None]] = ContextVar(
    "customop.tensor.current_fake_mode", default=None
)


#: Fake-mode classes whose ``make_fake`` only builds ``FakeTensor._new(shape, dtype,
#: device)``: `empty_like` builds that itself for them, a call frame cheaper on
#: the fake impl's hot path (issue #12). An exact-type set: a subclass may
#: override ``make_fake``. The fake layer adds ``FakeTensorMode``.
PLAIN_FAKE_FACTORIES: Final[set[type]] = set()

_new_object = object.__new__

# NOTE: a fake stands in for the array it fakes. For mypy, `empty_like(x)` and
# `new_empty(x, ...)` have x's type, whatever they return at run time (a real
# array, or under a fake mode the fake that stands in for it), as torch's
# FakeTensor is a torch.Tensor. So a fake impl annotated like its op
# (`def _(x: NDArray) -> NDArray: return empty_like(x)`) type-checks. Each
# function has an @overload pair: one FakeTensor -> FakeTensor, one for any
# other Tensor type.
TensorT = TypeVar("TensorT", bound=Tensor)


def current_fake_mode() -> FakeTensorFactory | None:
    """The active fake mode, or None outside every mode.

    Returns:
        The mode, or None.
    """
    return CURRENT_FAKE_MODE.get()


def _fake_wanted(sizes: tuple[IntLike, ...]) -> bool:
    return any(isinstance(size, SymInt) for size in sizes)


def _concrete(sizes: tuple[IntLike, ...]) -> tuple[int, ...]:
    return tuple(size for size in sizes if isinstance(size, int))


@overload
def empty(
    shape: int | Sequence[int],
    *,
    dtype: DTypeLike = float32,
    device: Literal["cpu"] = "cpu",
    dispatcher: Dispatcher | None = None,
    layout: object = None,
) -> np.ndarray[Any, np.dtype[Any]]: ...


@overload
def empty(
    shape: ShapeLike,
    *,
    dtype: DTypeLike = float32,
    device: Literal["meta"],
    dispatcher: Dispatcher | None = None,
    layout: object = None,
) -> FakeTensor: ...


@overload
def empty(
    shape: ShapeLike,
    *,
    dtype: DTypeLike = float32,
    device: DeviceLike = "cpu",
    dispatcher: Dispatcher | None = None,
    layout: object = None,
) -> Tensor: ...


def empty(
    shape: ShapeLike,
    *,
    dtype: DTypeLike = float32,
    device: DeviceLike = "cpu",
    dispatcher: Dispatcher | None = None,
    layout: object = None,
) -> Any:
    """A new uninitialised array: a fake under a fake mode or for symbolic sizes, else real.

    ``empty((s0, 3))`` is a `FakeTensor`; ``empty((2, 3))`` a numpy float32
    array; ``empty(4, device="toy")`` an array of the backend registered for
    device type ``"toy"`` (with an ``empty`` function). ``layout`` takes torch's
    spellings of the dense layout (``None``, ``"strided"``, ``torch.strided``).

    Args:
        shape: the sizes: an int, or a sequence of ints >= 0 and `SymInt`s.
        dtype: the element type (a customop `dtype`, a numpy or torch dtype, or its name).
        device: the device (``"cpu"``, ``"cuda:0"``, ``"meta"``, a `Device`...).
        dispatcher: where the backends of other devices are looked up;
            default: ``customop.dispatcher``.
        layout: torch's ``layout=``; only the dense (strided) layout is accepted.

    Returns:
        A `FakeTensor` inside a fake mode, for a symbolic size or on the ``meta``
        device; else a numpy array on the cpu, or an array of the device's backend.
        For mypy: a numpy array for int sizes on the cpu (under a fake mode, the
        fake stands in for it), a `FakeTensor` on ``meta``, else a `Tensor`
        (in a fake impl, `new_empty` keeps the reference array's type).

    Raises:
        ValueError: a size is negative, ``layout`` is not the dense one, or no
            backend with an ``empty`` function is registered for the device.
    """
    api = "empty"
    if layout is not None:
        check_layout(layout, api)
    sizes = to_shape(shape, api=api)
    element = to_dtype(dtype, api=api)
    where = to_device(device)
    mode = CURRENT_FAKE_MODE.get()
    if mode is not None:
        return mode.make_fake(sizes, element, where)
    if _fake_wanted(sizes) or where.type == "meta":
        return FakeTensor._new(sizes, element, where)
    if where.type == "cpu":
        return numpy_empty(_concrete(sizes), element, where)
    adapter = _adapter_for_device(where, dispatcher)
    if adapter is None or adapter.empty is None:
        _raise_no_backend(api, where)
    return adapter.empty(_concrete(sizes), element, where)


@overload
def empty_like(
    x: FakeTensor,
    *,
    dtype: DTypeLike | None = None,
    device: DeviceLike | None = None,
    dispatcher: Dispatcher | None = None,
) -> FakeTensor: ...


@overload
def empty_like(
    x: TensorT,
    *,
    dtype: DTypeLike | None = None,
    device: DeviceLike | None = None,
    dispatcher: Dispatcher | None = None,
) -> TensorT: ...


def empty_like(
    x: Any,
    *,
    dtype: DTypeLike | None = None,
    device: DeviceLike | None = None,
    dispatcher: Dispatcher | None = None,
) -> Any:
    """A new uninitialised array with ``x``'s shape (and dtype and device, unless given).

    Typed as returning ``x``'s own type: a fake made in a fake mode stands in
    for the array it fakes.

    Args:
        x: the array (or fake) to copy the metadata of.
        dtype: the element type instead of ``x``'s.
        device: the device instead of ``x``'s.
        dispatcher: where backends are looked up; default: ``customop.dispatcher``.

    Returns:
        The new array, or a `FakeTensor` when ``x`` is one.
    """
    if dtype is None and device is None and type(x) is FakeTensor:
        # The typical fake impl, `return customop.empty_like(x)`: nothing to check.
        mode = CURRENT_FAKE_MODE.get()
        if mode is None or type(mode) in PLAIN_FAKE_FACTORIES:
            # What FakeTensor._new and a plain mode's make_fake do, without their frame.
            fake = _new_object(FakeTensor)
            fake._shape = x._shape
            fake._dtype = x._dtype
            fake._device = x._device
            return fake
        return mode.make_fake(x._shape, x._dtype, x._device)
    return _like("empty_like", x, None, dtype=dtype, device=device, dispatcher=dispatcher)


@overload
def new_empty(
    x: FakeTensor,
    shape: ShapeLike,
    *,
    dtype: DTypeLike | None = None,
    device: DeviceLike | None = None,
    dispatcher: Dispatcher | None = None,
) -> FakeTensor: ...


@overload
def new_empty(
    x: TensorT,
    shape: ShapeLike,
    *,
    dtype: DTypeLike | None = None,
    device: DeviceLike | None = None,
    dispatcher: Dispatcher | None = None,
) -> TensorT: ...


def new_empty(
    x: Any,
    shape: ShapeLike,
    *,
    dtype: DTypeLike | None = None,
    device: DeviceLike | None = None,
    dispatcher: Dispatcher | None = None,
) -> Any:
    """A new uninitialised array of ``shape``, with ``x``'s backend, dtype and device.

    Typed as returning ``x``'s own type, as `empty_like` is.

    Args:
        x: the array (or fake) whose backend, dtype and device to use.
        shape: the new shape.
        dtype: the element type instead of ``x``'s.
        device: the device instead of ``x``'s.
        dispatcher: where backends are looked up; default: ``customop.dispatcher``.

    Returns:
        The new array, or a `FakeTensor` when ``x`` is one.
    """
    return _like("new_empty", x, shape, dtype=dtype, device=device, dispatcher=dispatcher)


def _like(
    api: str,
    x: Any,
    shape: ShapeLike | None,
    *,
    dtype: DTypeLike | None,
    device: DeviceLike | None,
    dispatcher: Dispatcher | None,
) -> Any:
    if isinstance(x, FakeTensor):
        # The fake impl's hot path: x's metadata is checked already.
        sizes = x._shape if shape is None else to_shape(shape, api=api)
        element = x._dtype if dtype is None else to_dtype(dtype, api=api)
        where = x._device if device is None else to_device(device)
        mode = CURRENT_FAKE_MODE.get()
        if mode is not None:
            return mode.make_fake(sizes, element, where)
        return FakeTensor._new(sizes, element, where)
    adapter = adapter_for(x, dispatcher=dispatcher)
    if adapter is None:
        _raise_not_an_array(api, x)
    sizes = to_shape(x.shape if shape is None else shape, api=api)
    element = to_dtype(x.dtype if dtype is None else dtype, api=api)
    where = adapter.device(x) if device is None else to_device(device)
    mode = CURRENT_FAKE_MODE.get()
    if mode is not None:
        return mode.make_fake(sizes, element, where)
    if _fake_wanted(sizes):
        return FakeTensor._new(sizes, element, where)
    if adapter.empty is None:
        raise TypeError(
            f"{api}: the backend of {type(x).__qualname__} has no empty function. customop "
            "allocates arrays of a user backend only through it. Pass empty= to "
            "register_backend for this array type."
        )
    return adapter.empty(_concrete(sizes), element, where)


def _adapter_for_device(where: Device, dispatcher: Dispatcher | None) -> ArrayAdapter | None:
    table = adapter_table(default_dispatcher if dispatcher is None else dispatcher)
    # The most recent registration for the device type wins, among those whose library
    # is imported (an adapter registered by name, "cupy...", needs its package).
    for adapter in reversed(table.values()):
        kind = adapter.array_type
        imported = not isinstance(kind, str) or kind.partition(".")[0] in sys.modules
        if adapter.device_type == where.type and adapter.empty is not None and imported:
            return adapter
    return None


def _raise_not_an_array(api: str, x: object) -> NoReturn:
    raise TypeError(
        f"{api}: {type(x).__qualname__} is not an array type of a registered backend. The "
        "new array takes its backend from the reference array. Pass a numpy array, a "
        "FakeTensor, or an array whose type was registered with register_backend."
    )


def _raise_no_backend(api: str, where: Device) -> NoReturn:
    raise ValueError(
        f"{api}: no backend with an empty function is registered for device {str(where)!r}. "
        "Without a reference array, customop needs one to allocate on that device. Use "
        "empty_like / new_empty with an array of that backend, or pass empty= to "
        "register_backend."
    )

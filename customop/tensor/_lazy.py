"""torch and cupy adapters, registered by name: customop never imports either package.

Each adapter names its array type by qualified name (``"torch.Tensor"``), so
registering it imports nothing; it starts serving when the first instance
shows up in a call, which means the package is imported by then. Functions
that need the package (``empty``) take it from ``sys.modules``.

torch tensors dispatch on their own device (``tensor.device.type``: cpu ->
CPU, cuda -> CUDA, meta -> Meta, privateuseone or a renamed backend ->
PrivateUse*), through a key function; cupy arrays are always CUDA.
"""

from __future__ import annotations

import sys
from typing import Any, Final

from customop.dispatch import DEFAULT_SOURCE, Dispatcher, DispatchKey, RegistrationHandle
from customop.exceptions import RegistrationError
from customop.tensor._backends import ArrayAdapter, add_adapter, device_keys_fn
from customop.tensor._device import Device
from customop.tensor._dtype import dtype

__all__ = ["CUPY_NAMES", "TORCH_NAME", "install_lazy"]

TORCH_NAME: Final = "torch.Tensor"
#: cupy.ndarray's qualified name: the class lives in cupy._core.core (cupy.core.core before v10).
CUPY_NAMES: Final = ("cupy._core.core.ndarray", "cupy.core.core.ndarray", "cupy.ndarray")


def _torch_device(tensor: Any) -> Device:
    return Device(tensor.device.type, tensor.device.index)


def _torch_empty(shape: tuple[int, ...], element: dtype, where: Device) -> Any:
    torch = sys.modules["torch"]  # a torch tensor asked for this, so torch is imported
    return torch.empty(shape, dtype=element.to_torch(), device=str(where))


def _cupy_device(array: Any) -> Device:
    return Device("cuda", int(array.device.id))


def _cupy_empty(shape: tuple[int, ...], element: dtype, where: Device) -> Any:
    if where.type != "cuda":
        raise ValueError(
            f"empty: cupy arrays live on cuda devices, not on {str(where)!r}. A cupy "
            "reference array can only make cuda arrays. Pass a cuda device, or make the "
            "array from a reference array of that device's backend."
        )
    cupy = sys.modules["cupy"]  # a cupy array asked for this, so cupy is imported
    if where.index is None:
        return cupy.empty(shape, dtype=element.numpy)
    with cupy.cuda.Device(where.index):
        return cupy.empty(shape, dtype=element.numpy)


def _adapters(dispatcher: Dispatcher) -> list[tuple[ArrayAdapter, Any]]:
    torch_keys = device_keys_fn(dispatcher, lambda tensor: tensor.device.type, TORCH_NAME)
    torch = ArrayAdapter(TORCH_NAME, None, _torch_device, _torch_empty, DEFAULT_SOURCE)
    cupy = [
        (ArrayAdapter(name, "cuda", _cupy_device, _cupy_empty, DEFAULT_SOURCE), DispatchKey.CUDA)
        for name in CUPY_NAMES
    ]
    return [(torch, torch_keys), *cupy]


def install_lazy(dispatcher: Dispatcher) -> RegistrationHandle:
    """Register the torch and cupy adapters in ``dispatcher``; one handle removes them.

    A type the user registered already keeps their registration.
    """
    handles: list[RegistrationHandle] = []
    for adapter, keys in _adapters(dispatcher):
        try:
            handles.append(add_adapter(dispatcher, adapter, keys))
        except RegistrationError:
            continue  # registered by the user first: theirs stands

    return RegistrationHandle.group(
        handles, description="torch and cupy backends", source=DEFAULT_SOURCE
    )

"""torch and cupy adapters, registered by name: customop never imports either package.

Each adapter names its array type by qualified name (``"torch.Tensor"``), so
registering it imports nothing; it starts serving when the first instance
shows up in a call, which means the package is imported by then. Functions
that need the package (``empty``) take it from ``sys.modules``.

torch tensors dispatch on their own device (``tensor.device.type``: cpu ->
CPU, cuda -> CUDA, meta -> Meta, privateuseone or a renamed backend ->
PrivateUse*), through a key function; cupy arrays are always CUDA.

NOTE: a torch tensor that torch's autograd tracks (it requires grad, and grad
mode is on) also carries ``AutogradOther``, the key customop's formulas live
on. An op with a formula that is not registered in torch then reaches its
formula kernel, which refuses the call (`customop.autograd`): torch would
differentiate the body and skip the formula, a silently wrong gradient.
Calls of ops registered in torch go to torch first and never get here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Final

from customop.dispatch import (
    DEFAULT_SOURCE,
    Dispatcher,
    DispatchKey,
    DispatchKeySet,
    RegistrationHandle,
)
from customop.exceptions import RegistrationError
from customop.tensor._backends import ArrayAdapter, add_adapter, device_keys_fn
from customop.tensor._device import Device
from customop.tensor._dtype import dtype

__all__ = ["CUPY_NAMES", "TORCH_NAME", "install_lazy", "torch_tracks"]

TORCH_NAME: Final = "torch.Tensor"
#: cupy.ndarray's qualified name: the class lives in cupy._core.core (cupy.core.core before v10).
CUPY_NAMES: Final = ("cupy._core.core.ndarray", "cupy.core.core.ndarray", "cupy.ndarray")


def _torch_device(tensor: Any) -> Device:
    return Device(tensor.device.type, tensor.device.index)


def _torch_empty(shape: tuple[int, ...], element: dtype, where: Device) -> Any:
    torch = sys.modules["torch"]  # a torch tensor asked for this, so torch is imported
    return torch.empty(shape, dtype=element.to_torch(), device=str(where))


def _torch_keys(dispatcher: Dispatcher) -> Callable[[Any], DispatchKeySet]:
    """The keys of a torch tensor: its device's, plus the formula key when torch tracks it."""
    device_keys = device_keys_fn(dispatcher, _torch_device_type, TORCH_NAME)
    tracked: dict[DispatchKeySet, DispatchKeySet] = {}

    def keys(tensor: Any) -> DispatchKeySet:
        found = device_keys(tensor)
        if torch_tracks(tensor):
            with_formula = tracked.get(found)
            if with_formula is None:
                with_formula = tracked[found] = found | DispatchKey.AutogradOther
            return with_formula
        return found

    return keys


def _torch_device_type(tensor: Any) -> str:
    return str(tensor.device.type)


def torch_tracks(value: Any) -> bool:
    """Whether torch's autograd tracks ``value``: it requires grad, and grad mode is on.

    What gives a torch tensor the formula key, and what the formula kernel
    refuses (`customop.autograd`): one test for both.
    """
    # `is True`: stand-ins for tensors (and torch's meta objects) may lack the flag.
    if getattr(value, "requires_grad", False) is not True:
        return False
    torch = sys.modules.get("torch")  # imported, when a torch tensor is here
    return torch is not None and bool(torch.is_grad_enabled())


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
    torch_keys = _torch_keys(dispatcher)
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

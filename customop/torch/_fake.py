"""customop fake impls as torch fakes: the same function, on torch FakeTensors and SymInts.

torch calls the trampoline with its FakeTensors (sizes may be torch SymInts)
under its FakeTensorMode. The trampoline runs customop's current fake impl of
the op with `TORCH_FAKES` as customop's fake factory, so what the impl asks
customop for comes from torch:

* ``customop.empty_like(x)``, ``new_empty``, ``empty``: ``torch.empty`` under
  torch's fake mode, i.e. a torch FakeTensor (symbolic sizes stay symbolic);
* ``customop.get_ctx().new_dynamic_size()``: torch's
  ``torch.library.get_ctx().new_dynamic_size()``, an unbacked torch SymInt;
* a customop `FakeTensor` the impl built by hand becomes a torch FakeTensor
  of the same shape, dtype and device.

Shape checks written with ordinary comparisons (``x.shape[0] == y.shape[0]``)
work on torch SymInts as they are.
"""

from __future__ import annotations

from typing import Any, Final, final

import torch

from customop.dispatch import DispatchKey, DispatchKeySet, OperatorHandle
from customop.symbolic import ShapeEnv
from customop.tensor import CURRENT_FAKE_MODE, Device, FakeTensor, dtype
from customop.torch._eager import Trampoline

__all__ = ["TORCH_FAKES", "fake_trampoline"]

_FAKE: Final = DispatchKeySet(DispatchKey.Fake)


# NOTE: ShapeEnv is final for customop's own code; this subclass is how customop.get_ctx()
# (which asks the active fake factory for its ShapeEnv) hands out torch's sizes instead.
@final
class _TorchShapeEnv(ShapeEnv):  # type: ignore[misc]
    """Sizes for ``get_ctx().new_dynamic_size()``: torch's unbacked SymInts."""

    __slots__ = ()

    def new_symint(self, min: int | None = 0, max: int | None = None) -> Any:
        """torch's ``new_dynamic_size(min=, max=)`` (``min=None`` means 0, torch's floor)."""
        ctx = torch.library.get_ctx()
        return ctx.new_dynamic_size(min=0 if min is None else min, max=max)


@final
class _TorchFakes:
    """customop's fake factory while a customop fake impl serves torch."""

    __slots__ = ("shape_env",)

    def __init__(self) -> None:
        self.shape_env = _TorchShapeEnv()

    def make_fake(self, shape: tuple[Any, ...], dtype: dtype, device: Device) -> Any:
        """``torch.empty`` of this metadata: a torch FakeTensor under torch's fake mode."""
        return torch.empty(shape, dtype=dtype.to_torch(), device=str(device))


#: The factory `fake_trampoline` installs for the duration of a fake impl call.
TORCH_FAKES: Final = _TorchFakes()


def _to_torch(value: Any) -> Any:
    if isinstance(value, FakeTensor):
        return TORCH_FAKES.make_fake(value.shape, value.dtype, value.device)
    if isinstance(value, tuple | list):
        return type(value)(_to_torch(item) for item in value)
    return value


def fake_trampoline(handle: OperatorHandle) -> Trampoline:
    """torch's fake impl for ``handle``: its customop fake impl, current at each call."""
    return _FakeKernel(handle)


class _FakeKernel(Trampoline):
    __slots__ = ("handle",)

    def __init__(self, handle: OperatorHandle) -> None:
        self.handle = handle

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        token = CURRENT_FAKE_MODE.set(TORCH_FAKES)
        try:
            result = self.handle.redispatch(_FAKE, *args, **kwargs)
        finally:
            CURRENT_FAKE_MODE.reset(token)
        return _to_torch(result)

"""Array test doubles: stand-ins for arrays of backends this machine may not have."""

from __future__ import annotations

from customop.dispatch import DispatchKey, DispatchKeySet


class _Array:
    """Shape and dtype only, like the Tensor protocol asks."""

    def __init__(self, shape: tuple[int, ...] = (2,)) -> None:
        self.shape = shape
        self.dtype = "float32"
        self.ndim = len(shape)


class CudaArray(_Array):
    """Dispatches to CUDA (and AutogradCUDA)."""


class MetaArray(_Array):
    """Dispatches to Meta (and AutogradMeta)."""


class DaskArray(_Array):
    """A user backend on PrivateUse1."""


class FakeArray(_Array):
    """A fake tensor: the Fake key plus its device's backend keys, chosen per instance."""

    def __init__(
        self, device: DispatchKey = DispatchKey.CPU, shape: tuple[int, ...] = (2,)
    ) -> None:
        super().__init__(shape)
        self.device = device


def fake_keys(array: FakeArray) -> DispatchKeySet:
    autograd = array.device.autograd_key
    assert autograd is not None
    return DispatchKeySet(DispatchKey.Fake, array.device, autograd)

"""Fixtures for the dispatcher tests: a fresh Dispatcher per test, and array test doubles."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from customop.dispatch import Dispatcher, DispatchKey
from tests.dispatch.doubles import CudaArray, DaskArray, FakeArray, MetaArray, fake_keys


@pytest.fixture
def dispatcher() -> Dispatcher:
    """A fresh dispatcher: numpy arrays are CPU, Autograd keys fall through."""
    return Dispatcher()


@dataclass(frozen=True)
class Doubles:
    cuda: type[CudaArray] = CudaArray
    meta: type[MetaArray] = MetaArray
    dask: type[DaskArray] = DaskArray
    fake: type[FakeArray] = FakeArray


@pytest.fixture
def doubles(dispatcher: Dispatcher) -> Doubles:
    """Register the array test doubles (CUDA, Meta, PrivateUse1, Fake) on ``dispatcher``."""
    dispatcher.register_array_type(CudaArray, DispatchKey.CUDA)
    dispatcher.register_array_type(MetaArray, DispatchKey.Meta)
    dispatcher.register_array_type(DaskArray, DispatchKey.PrivateUse1)
    dispatcher.register_array_type(FakeArray, fake_keys)
    return Doubles()

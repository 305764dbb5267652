"""A Device argument is a device of the op's dispatcher: bad text never reaches a kernel."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from customop import custom_op
from customop.dispatch import Dispatcher
from customop.tensor import Device

BAD = ["gpu", "cuda:abc", "", "cuda:-1", " cpu", "cuda:01", "cpu:"]


@pytest.fixture
def ops(dispatcher: Dispatcher) -> tuple[Any, Any, list[Any]]:
    seen: list[Any] = []

    @custom_op("dvc::make", mutates_args=(), dispatcher=dispatcher)
    def make(n: int, device: Device) -> np.ndarray:
        seen.append(device)
        return np.zeros(n)

    @custom_op("dvc::move", mutates_args=(), dispatcher=dispatcher)
    def move(x: np.ndarray, device: Device) -> np.ndarray:
        seen.append(device)
        return x.copy()

    return make, move, seen


@pytest.mark.parametrize("device", BAD, ids=[repr(d) for d in BAD])
@pytest.mark.parametrize("which", ["no-tensor", "with-tensor"])
def test_a_bad_device_is_refused_before_the_kernel(
    ops: tuple[Any, Any, list[Any]], device: str, which: str
) -> None:
    make, move, seen = ops
    make(1, "cpu")
    move(np.ones(1), "cpu")  # a good call first: the fast path must check again
    with pytest.raises(TypeError, match=r"argument 'device' \(position 1\) expects Device"):
        if which == "no-tensor":
            make(1, device)
        else:
            move(np.ones(1), device)
    assert seen == ["cpu", "cpu"]


def test_the_message_names_the_known_device_types(ops: tuple[Any, Any, list[Any]]) -> None:
    _, move, _ = ops
    with pytest.raises(TypeError) as info:
        move(np.ones(1), "gpu")
    assert str(info.value) == (
        "dvc::move: argument 'device' (position 1) expects Device, got str 'gpu'. The schema "
        "is dvc::move(Tensor x, Device device) -> Tensor. Pass a device of this dispatcher: "
        "a device type with an optional index, e.g. 'cpu' or 'cuda:1' (device types: cpu, "
        "cuda, meta, privateuseone, privateusethree, privateusetwo)."
    )


@pytest.mark.parametrize("device", ["cpu", "cuda:1", "meta", Device("cuda", 0)])
def test_good_devices_reach_the_kernel(ops: tuple[Any, Any, list[Any]], device: Any) -> None:
    _, move, seen = ops
    move(np.ones(1), device)
    assert seen == [device]


def test_a_renamed_backend_is_a_device_type(dispatcher: Dispatcher) -> None:
    dispatcher.rename_backend("PrivateUse1", "toy")

    @custom_op("dvc::to", mutates_args=(), dispatcher=dispatcher)
    def to(x: np.ndarray, device: Device) -> np.ndarray:
        return x.copy()

    to(np.ones(1), "toy:2")
    with pytest.raises(TypeError, match=r"device types: cpu, .*privateusetwo, toy\)"):
        to(np.ones(1), "gpu")

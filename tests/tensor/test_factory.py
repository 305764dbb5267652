"""empty / empty_like / new_empty: fakes for fakes (and in a fake mode), real arrays otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from customop.dispatch import Dispatcher, DispatchKey
from customop.symbolic._symint import IntLike
from customop.tensor import (
    CURRENT_FAKE_MODE,
    Device,
    FakeTensor,
    ShapeEnv,
    current_fake_mode,
    dtype,
    empty,
    empty_like,
    float32,
    float64,
    int64,
    new_empty,
    register_backend,
)
from tests.tensor.doubles import ToyArray


class RecordingMode:
    """A stand-in for the fake layer's FakeTensorMode: makes fakes and remembers them."""

    def __init__(self) -> None:
        self.made: list[FakeTensor] = []

    def make_fake(self, shape: tuple[IntLike, ...], dtype: dtype, device: Device) -> FakeTensor:
        fake = FakeTensor(shape, dtype, device)
        self.made.append(fake)
        return fake


@pytest.fixture
def mode() -> Iterator[RecordingMode]:
    active = RecordingMode()
    token = CURRENT_FAKE_MODE.set(active)
    yield active
    CURRENT_FAKE_MODE.reset(token)


@pytest.fixture
def toy(dispatcher: Dispatcher) -> Dispatcher:
    dispatcher.rename_backend("PrivateUse1", "toy")
    return dispatcher


def _toy_empty(shape: tuple[int, ...], element: dtype, device: Device) -> ToyArray:
    return ToyArray(np.empty(shape, dtype=element.numpy), index=device.index or 0)


def test_empty_is_real_numpy_float32_by_default() -> None:
    array = empty((2, 3))
    assert type(array) is np.ndarray
    assert (array.shape, array.dtype) == ((2, 3), np.float32)
    assert empty(4, dtype="long").dtype == np.int64


def test_empty_is_fake_for_symbolic_sizes_or_meta(env: ShapeEnv) -> None:
    s0 = env.new_symint()
    assert repr(empty((s0, 3), dtype=int64)) == (
        "FakeTensor(shape=(s0, 3), dtype=int64, device=cpu)"
    )
    assert repr(empty(2, device="meta")) == "FakeTensor(shape=(2,), dtype=float32, device=meta)"


def test_empty_on_a_user_backend(toy: Dispatcher) -> None:
    register_backend(ToyArray, "toy", empty=_toy_empty, dispatcher=toy)
    array = empty((2,), dtype=float64, device="toy:1", dispatcher=toy)
    assert isinstance(array, ToyArray)
    assert (array.shape, array.dtype, array.index) == ((2,), np.float64, 1)


def test_empty_without_a_backend_for_the_device(dispatcher: Dispatcher) -> None:
    with pytest.raises(ValueError) as info:
        empty(2, device="cuda", dispatcher=dispatcher)
    assert str(info.value) == (
        "empty: no backend with an empty function is registered for device 'cuda'. Without a "
        "reference array, customop needs one to allocate on that device. Use empty_like / "
        "new_empty with an array of that backend, or pass empty= to register_backend."
    )


def test_like_functions_on_numpy() -> None:
    x = np.ones((2, 3), dtype=np.int32)
    like = empty_like(x)
    assert (type(like), like.shape, like.dtype) == (np.ndarray, (2, 3), np.int32)
    new = new_empty(x, (5,), dtype=float32)
    assert (new.shape, new.dtype) == ((5,), np.float32)
    with pytest.raises(ValueError, match=r"^empty: numpy arrays live on the cpu, not on 'cuda'"):
        empty_like(x, device="cuda")


def test_like_functions_on_fakes(env: ShapeEnv) -> None:
    s0 = env.new_symint()
    fake = FakeTensor((s0, 3), "float16", "cuda:1")
    assert repr(empty_like(fake)) == "FakeTensor(shape=(s0, 3), dtype=float16, device=cuda:1)"
    assert repr(new_empty(fake, (2 * s0,), dtype=int64)) == (
        "FakeTensor(shape=(2*s0,), dtype=int64, device=cuda:1)"
    )
    assert repr(empty_like(fake, device="toy")) == (
        "FakeTensor(shape=(s0, 3), dtype=float16, device=toy)"
    )


def test_symbolic_shape_from_a_real_reference_is_fake(env: ShapeEnv) -> None:
    s0 = env.new_symint()
    out = new_empty(np.zeros(2), (s0,))
    assert repr(out) == "FakeTensor(shape=(s0,), dtype=float64, device=cpu)"


def test_like_functions_on_a_user_backend(toy: Dispatcher) -> None:
    x = ToyArray(np.zeros(3, dtype=np.float32), index=2)
    with register_backend(ToyArray, "toy", dispatcher=toy):
        with pytest.raises(TypeError) as info:
            empty_like(x, dispatcher=toy)
        assert str(info.value) == (
            "empty_like: the backend of ToyArray has no empty function. customop allocates "
            "arrays of a user backend only through it. Pass empty= to register_backend for "
            "this array type."
        )
    with register_backend(ToyArray, "toy", empty=_toy_empty, dispatcher=toy):
        like = empty_like(x, dispatcher=toy)
        assert isinstance(like, ToyArray) and like.dtype == np.float32


def test_like_functions_need_an_array(dispatcher: Dispatcher) -> None:
    with pytest.raises(TypeError) as info:
        empty_like([1.0, 2.0], dispatcher=dispatcher)
    assert str(info.value) == (
        "empty_like: list is not an array type of a registered backend. The new array takes "
        "its backend from the reference array. Pass a numpy array, a FakeTensor, or an array "
        "whose type was registered with register_backend."
    )


def test_an_active_fake_mode_makes_every_result(mode: RecordingMode) -> None:
    assert current_fake_mode() is mode
    made = [empty((2,)), empty_like(np.zeros((3,), dtype=np.int64)), new_empty(np.zeros(1), 4)]
    assert made == mode.made
    assert [repr(x) for x in made] == [
        "FakeTensor(shape=(2,), dtype=float32, device=cpu)",
        "FakeTensor(shape=(3,), dtype=int64, device=cpu)",
        "FakeTensor(shape=(4,), dtype=float64, device=cpu)",
    ]


def test_no_mode_by_default() -> None:
    assert current_fake_mode() is None


def test_one_fake_impl_serves_every_device(toy: Dispatcher, env: ShapeEnv) -> None:
    def double_rows(x: Any) -> Any:
        return new_empty(x, (2 * x.shape[0], *x.shape[1:]))

    toy.register_def("t::double_rows(Tensor x) -> Tensor")
    toy.register_impl("t::double_rows", DispatchKey.Fake, double_rows)
    toy.register_impl("t::double_rows", DispatchKey.CPU, double_rows)
    op = toy.find_schema_or_throw("t::double_rows")
    s0 = env.new_symint()
    for device in ("cpu", "cuda:1", "toy"):
        out = op(FakeTensor((s0, 3), device=device))
        assert repr(out) == f"FakeTensor(shape=(2*s0, 3), dtype=float32, device={device})"
    real = op(np.zeros((2, 3)))
    assert (type(real), real.shape) == (np.ndarray, (4, 3))

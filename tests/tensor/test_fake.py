"""FakeTensor: metadata, validation, printing, and how it dispatches."""

from __future__ import annotations

import numpy as np
import pytest

from customop.dispatch import Dispatcher, DispatchKey, DispatchKeySet, exclude_keys
from customop.tensor import (
    FAKE_KEYS,
    Device,
    FakeTensor,
    ShapeEnv,
    SymInt,
    Tensor,
    float32,
    install_backends,
    int64,
)


def test_metadata(env: ShapeEnv) -> None:
    s0 = env.new_symint()
    fake = FakeTensor((s0, 3), "int64", "cuda:1")
    assert fake.shape == (s0, 3)
    assert fake.dtype is int64
    assert fake.device == Device("cuda:1")
    assert (fake.ndim, fake.dim()) == (2, 2)
    assert fake.size() == (s0, 3)
    assert fake.size(0) is s0
    assert fake.size(-1) == 3
    assert str(fake.numel()) == "3*s0"
    assert repr(fake) == "FakeTensor(shape=(s0, 3), dtype=int64, device=cuda:1)"
    assert isinstance(fake, Tensor)


def test_defaults_and_conversions() -> None:
    fake = FakeTensor(np.int64(4))
    assert fake.shape == (4,)
    assert type(fake.shape[0]) is int
    assert (fake.dtype, fake.device) == (float32, Device("cpu"))
    assert FakeTensor((), np.float64, Device("meta")).numel() == 1
    assert repr(FakeTensor([2, 3])) == "FakeTensor(shape=(2, 3), dtype=float32, device=cpu)"


def test_expression_sizes(env: ShapeEnv) -> None:
    s0 = env.new_symint()
    size = 2 * s0 + 1
    assert isinstance(size, SymInt)
    fake = FakeTensor((size, s0 - 1))  # s0 - 1 may be >= 0: allowed
    assert repr(fake) == "FakeTensor(shape=(2*s0 + 1, s0 - 1), dtype=float32, device=cpu)"


@pytest.mark.parametrize(
    ("shape", "error", "message"),
    [
        pytest.param(
            (2, -1),
            ValueError,
            "FakeTensor: size -1 in shape (2, -1) is negative. A dimension has a size >= 0. "
            "Pass sizes >= 0.",
            id="negative",
        ),
        pytest.param(
            (2, 1.5),
            TypeError,
            "FakeTensor: size 1.5 in shape (2, 1.5) is not an int or SymInt. Every dimension "
            "has an integer size. Pass a tuple of ints and SymInts, such as (s0, 3).",
            id="float",
        ),
        pytest.param(
            (True,),
            TypeError,
            "FakeTensor: size True in shape (True,) is not an int or SymInt. Every dimension "
            "has an integer size. Pass a tuple of ints and SymInts, such as (s0, 3).",
            id="bool",
        ),
        pytest.param(
            "23",
            TypeError,
            "FakeTensor: shape '23' is not a size or a sequence of sizes. A shape lists each "
            "dimension's size. Pass a tuple of ints and SymInts, such as (s0, 3), or one int.",
            id="str",
        ),
    ],
)
def test_bad_shapes(shape: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        FakeTensor(shape)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_negative_symbolic_size(env: ShapeEnv) -> None:
    s0 = env.new_symint(min=0, max=5)
    with pytest.raises(ValueError) as info:
        FakeTensor((s0 - 6,))
    assert str(info.value) == (
        "FakeTensor: size s0 - 6 in shape (s0 - 6,) is negative (its range ends at -1). A "
        "dimension has a size >= 0. Check the size computation."
    )


@pytest.mark.parametrize(
    ("dim", "error", "message"),
    [
        pytest.param(
            2,
            IndexError,
            "FakeTensor.size: dim 2 is out of range for a 2-d tensor of shape (2, 3). "
            "Dimensions count from 0, or from -1 at the end. Pass an int in [-2, 2).",
            id="too-big",
        ),
        pytest.param(
            "0",
            TypeError,
            "FakeTensor.size: dim '0' is not an int. A dimension is a position in the shape. "
            "Pass an int in [-2, 2).",
            id="str",
        ),
    ],
)
def test_bad_dims(dim: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        FakeTensor((2, 3)).size(dim)  # type: ignore[call-overload]
    assert str(info.value) == message


def test_refuses_numpy_conversion() -> None:
    fake = FakeTensor((2,))
    with pytest.raises(TypeError, match=r"^FakeTensor: FakeTensor\(shape=\(2,\), .* no data"):
        np.asarray(fake)
    with pytest.raises(TypeError):
        np.add(fake, 1)


def test_carries_fake_and_meta_keys_on_every_device() -> None:
    plain = Dispatcher(autograd_fallthrough=False)  # so that AutogradMeta shows
    with install_backends(plain):
        plain.register_def("t::f(Tensor x) -> str")
        op = plain.find_schema_or_throw("t::f")
        for device in ("cpu", "cuda:1", "toy"):
            assert op.dispatch_keyset(FakeTensor((2,), device=device)) == FAKE_KEYS
    expected = DispatchKeySet(DispatchKey.Fake, DispatchKey.Meta, DispatchKey.AutogradMeta)
    assert expected == FAKE_KEYS


def test_runs_fake_kernel_outside_any_mode(dispatcher: Dispatcher) -> None:
    dispatcher.register_def("t::f(Tensor x) -> str")
    dispatcher.register_impl("t::f", DispatchKey.CPU, lambda x: "cpu")
    dispatcher.register_impl("t::f", DispatchKey.Meta, lambda x: "meta")
    op = dispatcher.find_schema_or_throw("t::f")
    fake = FakeTensor((2,), device="cuda")
    assert op(fake) == "meta"  # Fake borrows the Meta kernel
    dispatcher.register_impl("t::f", DispatchKey.Fake, lambda x: "fake")
    assert op(fake) == "fake"
    assert op(np.zeros(2)) == "cpu"
    assert op(fake) == "fake"
    with exclude_keys(DispatchKey.Fake):
        # Never a real device's kernel (a fake has no data); Meta runs the fake impl,
        # as torch's register_fake makes it the op's Meta kernel.
        assert op(fake) == "fake"

"""The tensor layer seen through the library: SymInt, dtype and Device arguments, fakes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from customop.dispatch import Dispatcher
from customop.library import Library, Ops, custom_op
from customop.tensor import (
    Device,
    FakeTensor,
    ShapeEnv,
    SymInt,
    Tensor,
    dtype,
    empty,
    float32,
    int64,
    new_empty,
)


def test_symint_arguments_are_ints(dispatcher: Dispatcher, env: ShapeEnv) -> None:
    lib = Library("t", "DEF", dispatcher=dispatcher)
    lib.define("view(Tensor x, SymInt[] shape) -> Tensor")
    lib.define("repeat(Tensor x, int times) -> Tensor")
    lib.impl("view", new_empty, "Fake")
    lib.impl("repeat", lambda x, times: new_empty(x, (x.shape[0] * times,)), "Fake")
    ops = Ops(dispatcher)
    s0 = env.new_symint()
    fake = FakeTensor((s0, 4))
    assert repr(ops.t.view(fake, [4, s0])) == (
        "FakeTensor(shape=(4, s0), dtype=float32, device=cpu)"
    )
    assert repr(ops.t.repeat(fake, s0 + 1)) == (
        "FakeTensor(shape=(s0*s0 + s0,), dtype=float32, device=cpu)"
    )
    with pytest.raises(TypeError, match=r"argument 'times' \(position 1\) expects int, got float"):
        ops.t.repeat(fake, 1.5)


def test_dtype_and_device_arguments(dispatcher: Dispatcher) -> None:
    lib = Library("t", "DEF", dispatcher=dispatcher)
    lib.define("full(SymInt[] size, *, ScalarType dtype, Device device) -> Tensor")
    lib.impl("full", lambda size, *, dtype, device: ("cpu", dtype, device), "CPU")
    lib.impl("full", lambda size, *, dtype, device: ("cuda", dtype, device), "CUDA")
    full = Ops(dispatcher).t.full
    assert full([2], dtype=int64, device=Device("cuda:1")) == ("cuda", int64, Device("cuda:1"))
    assert full([2], dtype=np.float32, device="cpu") == ("cpu", np.float32, "cpu")


def test_custom_op_with_a_fake_impl_runs_on_fakes(dispatcher: Dispatcher, env: ShapeEnv) -> None:
    @custom_op("t::pairs", mutates_args=(), dispatcher=dispatcher)
    def pairs(x: Tensor, out_dtype: dtype = float32, device: Device | None = None) -> Tensor:
        return np.stack([x, x], axis=-1).astype(out_dtype.numpy)

    @pairs.register_fake
    def _(x: Tensor, out_dtype: dtype = float32, device: Device | None = None) -> Tensor:
        return new_empty(x, (*x.shape, 2), dtype=out_dtype, device=device)

    assert str(pairs.schema) == (
        "t::pairs(Tensor x, ScalarType out_dtype=6, Device? device=None) -> Tensor"
    )
    s0 = env.new_symint()
    out = pairs(FakeTensor((s0,), device="cuda:1"), int64)
    assert repr(out) == "FakeTensor(shape=(s0, 2), dtype=int64, device=cuda:1)"
    real = pairs(np.arange(3.0), float32)
    assert (real.shape, real.dtype) == ((3, 2), np.float32)


def test_factory_shapes_take_symint_sequences(env: ShapeEnv) -> None:
    s0, s1 = env.new_symint(), env.new_symint()
    sizes: Sequence[int | SymInt] = [s0, s1 * 2]
    assert repr(empty(sizes)) == "FakeTensor(shape=(s0, 2*s1), dtype=float32, device=cpu)"


def test_scalar_type_defaults_reach_kernels_as_dtypes(dispatcher: Dispatcher) -> None:
    lib = Library("t", "DEF", dispatcher=dispatcher)
    lib.define("cast(Tensor x, ScalarType dtype=long) -> Tensor")
    lib.impl("cast", lambda x, dtype: x.astype(dtype), "CPU")
    out = Ops(dispatcher).t.cast(np.ones(2))
    assert out.dtype == np.int64

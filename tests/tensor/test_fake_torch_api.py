"""Fake impls written for torch run on customop's fakes: torch's result metadata, strides included.

Each case runs the same torch code on a real torch tensor and on its fake
(``FakeTensorMode().from_real``): the fake's shape, dtype, device and
significant strides must be torch's. Symbolic sizes stay symbolic, and what
customop cannot fake fails naming the method or function.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import customop  # noqa: E402
from customop import FakeTensor, FakeTensorMode, SymInt  # noqa: E402
from customop.tensor import significant_mismatch  # noqa: E402

F = torch.nn.functional
Op = Callable[..., Any]


def _same_metadata(fake: Any, real: Any) -> None:
    if isinstance(real, tuple | list):
        assert isinstance(fake, tuple | list)
        assert len(fake) == len(real)
        for f, r in zip(fake, real, strict=True):
            _same_metadata(f, r)
        return
    assert isinstance(fake, FakeTensor), type(fake)
    assert tuple(fake.shape) == tuple(real.shape)
    assert fake.dtype == real.dtype
    assert str(fake.device) == str(real.device)
    assert significant_mismatch(real.shape, tuple(real.stride()), fake.stride()) is None, (
        real.stride(),
        fake.stride(),
    )


CASES = [
    pytest.param(lambda x: x.clone(), id="clone"),
    pytest.param(lambda x: x * 2, id="mul-scalar"),
    pytest.param(lambda x: 2 * x, id="rmul-scalar"),
    pytest.param(lambda x: x**2, id="pow"),
    pytest.param(lambda x: x + x, id="add"),
    pytest.param(lambda x: x - 1.5, id="sub-float"),
    pytest.param(lambda x: x / 2, id="div"),
    pytest.param(lambda x: -x, id="neg"),
    pytest.param(lambda x: x.sin(), id="sin-method"),
    pytest.param(torch.sin, id="torch.sin"),
    pytest.param(lambda x: x.sum(), id="sum"),
    pytest.param(lambda x: x.sum(1), id="sum-dim"),
    pytest.param(lambda x: x.sum(dim=(0, 2), keepdim=True), id="sum-keepdim"),
    pytest.param(lambda x: torch.sum(x, 0), id="torch.sum"),
    pytest.param(lambda x: x.mean(-1), id="mean"),
    pytest.param(lambda x: x.amax(1), id="amax"),
    pytest.param(lambda x: x.max(dim=1), id="max-dim"),
    pytest.param(lambda x: x.argmax(), id="argmax"),
    pytest.param(lambda x: torch.cat([x, x]), id="cat"),
    pytest.param(lambda x: torch.cat([x, x], dim=2), id="cat-dim"),
    pytest.param(lambda x: torch.stack([x, x], 1), id="stack"),
    pytest.param(lambda x: torch.tensor_split(x, 2), id="tensor_split"),
    pytest.param(lambda x: torch.tensor_split(x, [1, 3], dim=2), id="tensor_split-indices"),
    pytest.param(lambda x: x.split(1), id="split"),
    pytest.param(lambda x: x.chunk(2, dim=2), id="chunk"),
    pytest.param(lambda x: x.new_empty(5, 2), id="new_empty"),
    pytest.param(lambda x: x.new_empty((5,), dtype=torch.int64), id="new_empty-dtype"),
    pytest.param(lambda x: torch.empty_like(x), id="empty_like"),
    pytest.param(lambda x: torch.zeros_like(x, dtype=torch.float16), id="zeros_like"),
    pytest.param(lambda x: x[:1].expand(4, 3, 4), id="expand"),
    pytest.param(lambda x: x.view(6, 4), id="view"),
    pytest.param(lambda x: x.reshape(-1), id="reshape"),
    pytest.param(lambda x: x.transpose(0, 2), id="transpose"),
    pytest.param(lambda x: x.transpose(0, 2).contiguous(), id="contiguous"),
    pytest.param(lambda x: x.permute(2, 0, 1).clone(), id="clone-keeps-layout"),
    pytest.param(lambda x: x.to(torch.float16), id="to-dtype"),
    pytest.param(lambda x: x.to("cpu", torch.float64), id="to-device-dtype"),
    pytest.param(lambda x: x.float().long(), id="float-long"),
    pytest.param(lambda x: x[:, 1:, ::2], id="slice"),
    pytest.param(lambda x: x.unsqueeze(1), id="unsqueeze"),
    pytest.param(lambda x: x @ x.transpose(1, 2), id="matmul"),
    pytest.param(lambda x: F.silu(x), id="F.silu"),
    pytest.param(lambda x: F.softmax(x, dim=-1), id="F.softmax"),
    pytest.param(lambda x: torch.where(x > 0, x, 0.0), id="where"),
]


@pytest.mark.parametrize("op", CASES)
def test_a_torch_fake_impl_gives_torchs_metadata_on_customop_fakes(op: Op) -> None:
    real = torch.randn(2, 3, 4)
    with FakeTensorMode() as mode:
        fake = op(mode.from_real(real))
    _same_metadata(fake, op(real))


@pytest.mark.parametrize(
    ("other", "expected"),
    [
        pytest.param(lambda: torch.ones(3, dtype=torch.int32), torch.float16, id="int-tensor"),
        pytest.param(lambda: torch.tensor(2.0, dtype=torch.float64), torch.float16, id="0-dim"),
        pytest.param(lambda: 3, torch.float16, id="int"),
        pytest.param(lambda: torch.ones(3, dtype=torch.float32), torch.float32, id="wider"),
    ],
)
def test_arithmetic_promotes_as_torch_does(other: Callable[[], Any], expected: Any) -> None:
    real = torch.ones(3, dtype=torch.float16)
    fake = FakeTensorMode().from_real(real)
    assert (real * other()).dtype == expected
    assert (fake * other()).dtype == expected


def test_int_tensors_give_float_sin_and_int64_sums() -> None:
    fake = FakeTensor((4,), customop.int32)
    assert fake.sin().dtype == customop.float32
    assert fake.sum().dtype == customop.int64
    assert (fake / 2).dtype == customop.float32
    assert (fake * 2.5).dtype == customop.float32


def test_fakes_from_real_tensors_keep_their_strides() -> None:
    real = torch.randn(4, 5).t()
    fake = FakeTensorMode().from_real(real)
    assert fake.stride() == real.stride() == (1, 5)
    assert not fake.is_contiguous()
    assert fake.contiguous().stride() == real.contiguous().stride()


def test_fakes_from_numpy_arrays_keep_their_strides() -> None:
    import numpy as np

    array = np.zeros((3, 4), dtype=np.float32).T
    assert FakeTensorMode().from_real(array).stride() == (1, 4)


def test_symbolic_sizes_stay_symbolic(env: customop.tensor.ShapeEnv) -> None:
    s = env.new_symint(2, 10)
    fake = FakeTensor((s, 3))
    assert isinstance(torch.cat([fake, fake]).shape[0], SymInt)
    assert (fake * 2).shape == (s, 3)
    assert fake.sum(1).shape == (s,)
    assert torch.empty_like(fake).shape == (s, 3)
    assert fake.transpose(0, 1).stride() == (1, 3)


def test_torch_factories_give_fakes_for_customop_dtypes_devices_and_symints(
    env: customop.tensor.ShapeEnv,
) -> None:
    s = env.new_symint(1, None)
    x = FakeTensor((4, 2), customop.float16)
    made = torch.empty(x.shape[0], s, device=x.device, dtype=x.dtype)
    assert isinstance(made, FakeTensor)
    assert made.shape == (4, s)
    assert made.dtype == customop.float16
    assert torch.zeros((s, 3)).shape == (s, 3)  # torch parses torch.zeros(s, 3) itself


def test_torch_factories_outside_a_fake_mode_run_torch_with_torchs_dtype() -> None:
    made = torch.zeros(3, dtype=customop.float16, device=customop.Device("cpu"))
    assert isinstance(made, torch.Tensor)
    assert made.dtype == torch.float16


def test_an_unsupported_method_fails_naming_it() -> None:
    with pytest.raises(AttributeError, match=r"Tensor\.nonzero is not supported on customop fakes"):
        FakeTensor((3,)).nonzero()  # type: ignore[attr-defined]


def test_an_unsupported_torch_function_fails_naming_it() -> None:
    with pytest.raises(TypeError, match=r"torch\.nonzero is not supported on customop fakes"):
        torch.nonzero(FakeTensor((3,)))


def test_shapes_that_do_not_broadcast_fail() -> None:
    with pytest.raises(ValueError, match="do not broadcast"):
        FakeTensor((3,)) + FakeTensor((4,))


def test_the_methods_work_without_importing_torch() -> None:
    code = (
        "import sys, customop\n"
        "x = customop.FakeTensor((2, 3))\n"
        "y = (x * 2).sin().sum(1).to(customop.float16).clone()\n"
        "print(y.shape, y.dtype, 'torch' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["(2,)", "float16", "False"]


def test_a_fake_as_the_input_keyword_works() -> None:
    assert torch.sin(input=FakeTensor((2, 3))).shape == (2, 3)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda f: torch.broadcast_tensors(f, f), id="unsupported-positional"),
        pytest.param(lambda f: torch.add(2, other=f), id="keyword-only"),
    ],
)
def test_a_fake_torch_cannot_take_fails_clearly_instead_of_recursing(call: Op) -> None:
    with pytest.raises(TypeError, match="is not supported on customop fakes"):
        call(FakeTensor((2, 3)))

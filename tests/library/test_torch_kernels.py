"""Kernels written for torch's dispatcher run on customop's as on torch's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import customop  # noqa: E402
from customop import FakeTensorMode  # noqa: E402
from customop.dispatch import Dispatcher  # noqa: E402
from customop.library import Ops  # noqa: E402


@pytest.fixture
def lib(d: Dispatcher) -> Any:
    with customop.Library("tk", "FRAGMENT", dispatcher=d) as library:
        library.define("f(Tensor x) -> Tensor")
        yield library


def _below_autograd_function(op: Any, calls: list[str]) -> type:
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            calls.append("forward")
            ctx.save_for_backward(x)
            with torch._C._AutoDispatchBelowAutograd():
                return op(x)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            calls.append("backward")
            return grad * 2

    return Double


def test_an_autograd_function_on_the_autograd_key_reaches_the_kernel_below(
    d: Dispatcher, lib: Any
) -> None:
    op, calls = Ops(d).tk.f.default, []
    lib.impl("f", _below_autograd_function(op, calls).apply, "Autograd")
    lib.impl("f", lambda x: x * 2, "CPU")
    x = torch.ones(3, requires_grad=True)
    y = op(x)  # no recursion: the forward's call goes below the autograd keys
    y.sum().backward()
    torch.testing.assert_close(y.detach(), torch.full((3,), 2.0))
    torch.testing.assert_close(x.grad, torch.full((3,), 2.0))
    assert calls == ["forward", "backward"]


def test_fakes_skip_the_autograd_key_kernel_for_the_fake_impl(d: Dispatcher, lib: Any) -> None:
    op, calls = Ops(d).tk.f.default, []
    lib.impl("f", _below_autograd_function(op, calls).apply, "Autograd")
    lib.impl("f", lambda x: x * 2, "CPU")
    lib.register_fake("f", lambda x: x.clone())
    with FakeTensorMode() as mode:
        fake = mode.from_real(torch.ones(3, requires_grad=True))
        assert op(fake).shape == (3,)
    assert calls == []  # torch's autograd.Function never saw a customop fake


def test_numpy_arrays_still_run_an_autograd_key_kernel(d: Dispatcher, lib: Any) -> None:
    lib.impl("f", lambda x: x + 1, "CPU")
    lib.impl("f", lambda x: x + 10, "AutogradCPU")
    np.testing.assert_array_equal(Ops(d).tk.f(np.zeros(2)), np.full(2, 10.0))


def test_a_decomposition_that_is_an_autograd_function_runs_its_forward_on_fakes(
    d: Dispatcher, lib: Any
) -> None:
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)  # a no-op on fakes: nothing to differentiate
            return x * x

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    lib.impl("f", Square.apply, "CompositeImplicitAutograd")
    op = Ops(d).tk.f.default
    x = torch.full((2,), 3.0, requires_grad=True)
    op(x).sum().backward()
    torch.testing.assert_close(x.grad, torch.full((2,), 6.0))
    with FakeTensorMode() as mode:
        assert op(mode.from_real(torch.ones(2, 5))).shape == (2, 5)


def test_the_dump_names_the_autograd_function(d: Dispatcher, lib: Any) -> None:
    op = Ops(d).tk.f.default
    lib.impl("f", _below_autograd_function(op, []).apply, "Autograd")
    assert "Double.apply at test_torch_kernels.py:" in d.dump("tk::f")

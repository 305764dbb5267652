"""customop.opcheck on torch tensors: torch's checks, names, strides and phrases."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import customop  # noqa: E402
from customop import AutogradError, OpCheckError, custom_op, opcheck  # noqa: E402
from customop.dispatch import Dispatcher  # noqa: E402
from customop.library import Ops  # noqa: E402

TORCH = (
    "test_schema",
    "test_autograd_registration",
    "test_faketensor",
    "test_aot_dispatch_dynamic",
)


def _scale(dispatcher: Dispatcher, fake: Any = None) -> Any:
    @custom_op("ot::scale", mutates_args=(), dispatcher=dispatcher)
    def scale(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    scale.register_fake(fake or (lambda x: torch.empty_like(x)))
    return scale


def test_torch_tensors_get_torchs_checks_under_torchs_names(dispatcher: Dispatcher) -> None:
    assert opcheck(_scale(dispatcher), (torch.randn(3),)) == dict.fromkeys(TORCH, "SUCCESS")


def test_numpy_arrays_keep_customops_checks(dispatcher: Dispatcher) -> None:
    scale = _scale(dispatcher, lambda x: customop.empty_like(x))
    assert list(opcheck(scale, (np.ones(3),))) == ["test_schema", "test_faketensor", "test_trace"]


@pytest.mark.parametrize("name", ["test_aot_dispatch_dynamic", "test_aot_dispatch_static"])
def test_torchs_trace_checks_are_customops_trace_under_the_name_asked(
    dispatcher: Dispatcher, name: str
) -> None:
    assert opcheck(_scale(dispatcher), (torch.randn(3),), test_utils=name) == {name: "SUCCESS"}


def test_a_tensor_that_requires_grad_is_counted_and_compared(dispatcher: Dispatcher) -> None:
    bridge = pytest.importorskip("customop.torch")
    scale = _scale(dispatcher)
    scale.register_autograd(lambda ctx, grad: grad * 2)
    handle = bridge.register(scale)  # torch runs the formula: the call may track gradients
    try:
        x = torch.randn(3, requires_grad=True)
        result = opcheck(scale, (x,), test_utils="test_faketensor")
    finally:
        handle.remove()
    assert result == {"test_faketensor": "SUCCESS"}


def test_an_op_torch_does_not_know_refuses_a_tensor_that_requires_grad(
    dispatcher: Dispatcher,
) -> None:
    scale = _scale(dispatcher)
    scale.register_autograd(lambda ctx, grad: grad * 2)
    x = torch.randn(3, requires_grad=True)
    # torch would differentiate the body and skip the formula: the call says so.
    with pytest.raises(AutogradError, match=r"'ot::scale': argument 'x' .*customop.torch.register"):
        opcheck(scale, (x,), test_utils="test_faketensor")
    with torch.no_grad():  # no gradient wanted: the call runs, and is compared
        assert opcheck(scale, (x,), test_utils="test_faketensor") == {"test_faketensor": "SUCCESS"}


def test_a_fake_with_the_wrong_strides_fails_with_torchs_words(dispatcher: Dispatcher) -> None:
    @custom_op("ot::t", mutates_args=(), dispatcher=dispatcher)
    def t(x: torch.Tensor) -> torch.Tensor:
        return x.clone().t()

    t.register_fake(lambda x: x.new_empty(x.shape[1], x.shape[0]))
    with pytest.raises(OpCheckError) as info:
        opcheck(t, (torch.randn(2, 3),), test_utils="test_faketensor")
    message = str(info.value)
    assert "Stride mismatch! Strides are (1, 3) and (2, 1) (mismatched at 0)!" in message
    assert message.startswith("opcheck(ot::t [ot.t.default]): test_faketensor failed:")


def test_a_fake_that_keeps_the_kernels_layout_passes(dispatcher: Dispatcher) -> None:
    @custom_op("ot::t", mutates_args=(), dispatcher=dispatcher)
    def t(x: torch.Tensor) -> torch.Tensor:
        return x.clone().t()

    t.register_fake(lambda x: x.clone().t())
    assert opcheck(t, (torch.randn(2, 3),), test_utils="test_faketensor")["test_faketensor"]


def test_a_fake_returning_an_input_where_the_kernel_does_not_fails(dispatcher: Dispatcher) -> None:
    scale = _scale(dispatcher, lambda x: x)
    with pytest.raises(OpCheckError, match="mismatch in outputs_are_inputs check"):
        opcheck(scale, (torch.randn(3),), test_utils="test_faketensor")


def test_an_op_that_is_not_customops_is_a_value_error(dispatcher: Dispatcher) -> None:
    with pytest.raises(ValueError, match="op must be a customop OpOverload"):
        opcheck(torch.ops.aten.sin.default, (torch.randn(3),))


def test_an_unknown_check_is_a_value_error_listing_torchs_names(dispatcher: Dispatcher) -> None:
    with pytest.raises(ValueError, match="test_aot_dispatch_dynamic"):
        opcheck(_scale(dispatcher), (torch.randn(3),), test_utils="test_aot_dispatch")


def test_a_backend_kernel_recording_autograd_fails_registration(dispatcher: Dispatcher) -> None:
    scale = _scale(dispatcher)
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(OpCheckError, match="incorrectly registered") as info:
        opcheck(scale, (x,))
    assert "test_autograd_registration failed" in str(info.value)


def test_no_input_requiring_grad_passes_registration(dispatcher: Dispatcher) -> None:
    scale = _scale(dispatcher)
    result = opcheck(scale, (torch.randn(3),), test_utils="test_autograd_registration")
    assert result == {"test_autograd_registration": "SUCCESS"}


@pytest.mark.parametrize("key", ["Autograd", "AutogradCPU"])
def test_a_kernel_on_an_autograd_key_passes_registration(dispatcher: Dispatcher, key: str) -> None:
    with customop.Library("otag", "FRAGMENT", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", lambda x: x * 2, "CPU")
        lib.impl("f", lambda x: x * 2, key)
        op = Ops(dispatcher).otag.f.default
        x = torch.randn(3, requires_grad=True)
        assert opcheck(op, (x,), test_utils="test_autograd_registration")


def test_differing_outputs_chain_torchs_errors_with_the_numbers(dispatcher: Dispatcher) -> None:
    calls = []

    @custom_op("ot::count", mutates_args=(), dispatcher=dispatcher)
    def count(x: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        return x + len(calls)

    count.register_fake(lambda x: torch.empty_like(x))
    with pytest.raises(OpCheckError, match="eager-mode PyTorch vs AOTDispatcher") as info:
        opcheck(count, (torch.zeros(()),), test_utils="test_aot_dispatch_dynamic")
    outputs = info.value.__context__
    assert outputs is not None
    assert "Absolute difference: 1.0 (up to 0.0 allowed)" in str(outputs.__context__)

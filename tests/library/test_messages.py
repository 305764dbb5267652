"""Messages the audit graded (issue #11 §5): each names the op and says how to fix."""

from __future__ import annotations

import numpy as np
import pytest

from customop.dispatch import Dispatcher
from customop.exceptions import (
    DispatchKeyError,
    MissingKernelError,
    RegistrationError,
    SchemaError,
)
from customop.library import Library, Ops, custom_op


def test_a_schema_python_cannot_spell_reads_as_a_sentence(dispatcher: Dispatcher, ops: Ops) -> None:
    # `int from` cannot be a Python parameter: such calls bind through choose_overload.
    with Library("msg", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x, int from=2) -> Tensor")
        lib.impl("f", lambda x, n: x, "CPU")
        with pytest.raises(TypeError) as caught:
            ops.msg.f.default(np.ones(1), "a")
    assert str(caught.value) == (
        "msg::f: the arguments do not bind to its schema msg::f(Tensor x, int from=2) -> "
        "Tensor: argument 'from' expects int, got str. Pass arguments that fit the schema."
    )


def test_a_packet_call_given_an_argument_twice_explains_it(
    dispatcher: Dispatcher, ops: Ops
) -> None:
    with Library("msg", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x, int n) -> Tensor")
        lib.define("f.other(Tensor x, str s) -> Tensor")
        with pytest.raises(TypeError) as caught:
            ops.msg.f(np.ones(1), 2, n=3)
    message = str(caught.value)
    assert "argument 'n' was given twice, by position and by name" in message
    assert "or call that overload directly, e.g. msg.f.default(...)" in message


def test_an_unknown_dispatch_key_names_the_op(dispatcher: Dispatcher) -> None:
    with Library("msg", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x) -> Tensor")
        with pytest.raises(DispatchKeyError, match=r"^Library\.impl\('msg::f'\): dispatch key"):
            lib.impl("f", lambda x: x, "CPUU")


def test_a_closed_library_names_the_op(dispatcher: Dispatcher) -> None:
    lib = Library("msg", "DEF", dispatcher=dispatcher)
    lib.close()
    with pytest.raises(RegistrationError, match="is closed, so 'f' cannot be registered"):
        lib.impl("f", lambda x: x, "CPU")
    with pytest.raises(RegistrationError, match=r"so 'g\(Tensor x\) -> Tensor' cannot be"):
        lib.define("g(Tensor x) -> Tensor")


def test_infer_schema_errors_in_custom_op_name_the_op(dispatcher: Dispatcher) -> None:
    def body(x: np.ndarray, table: dict) -> np.ndarray:  # type: ignore[type-arg]
        return x

    with pytest.raises(SchemaError) as caught:
        custom_op("msg::lookup", body, mutates_args=(), dispatcher=dispatcher)
    assert str(caught.value).startswith(
        "custom_op 'msg::lookup': infer_schema: parameter 'table' of function"
    )


def test_missing_kernel_suggests_register_kernel_for_custom_ops(dispatcher: Dispatcher) -> None:
    @custom_op("msg::gpu_only", mutates_args=(), device_types="cuda", dispatcher=dispatcher)
    def gpu_only(x: np.ndarray) -> np.ndarray:
        return x

    with pytest.raises(MissingKernelError) as caught:
        gpu_only(np.ones(1))
    assert "Register one with gpu_only.register_kernel('cpu', fn)" in str(caught.value)
    assert "register_impl" not in str(caught.value)


def test_missing_kernel_suggests_register_impl_for_library_ops(dispatcher: Dispatcher) -> None:
    with Library("msg", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", lambda x: x, "CUDA")
        with pytest.raises(MissingKernelError, match=r"register_impl\('msg::f', 'CPU', fn\)"):
            dispatcher.find_op("msg::f")(np.ones(1))  # type: ignore[misc]


def test_custom_op_without_mutates_args_says_what_to_pass(dispatcher: Dispatcher) -> None:
    def f(x: np.ndarray) -> np.ndarray:
        return x

    for make in (
        lambda: custom_op("msg::f", f, dispatcher=dispatcher),  # type: ignore[call-overload]
        lambda: custom_op("msg::f", dispatcher=dispatcher)(f),  # type: ignore[call-overload]
    ):
        with pytest.raises(TypeError) as caught:
            make()
        assert str(caught.value) == (
            "custom_op 'msg::f': mutates_args is missing. customop must know which tensor "
            "arguments the function writes to: callers, tracing and autograd assume the "
            "others are unchanged (torch requires it too). Pass mutates_args=() when it "
            "changes none of its inputs, the names of those it writes to, or "
            "MutatesArgs.UNKNOWN."
        )
    assert dispatcher.find_op("msg::f") is None  # nothing was registered


@pytest.mark.parametrize("device", ["cuda:0", "cpu:1"])
def test_register_kernel_with_a_device_index_says_to_drop_it(
    dispatcher: Dispatcher, device: str
) -> None:
    @custom_op("msg::g", mutates_args=(), dispatcher=dispatcher)
    def g(x: np.ndarray) -> np.ndarray:
        return x

    kind = device.partition(":")[0]
    with pytest.raises(RegistrationError) as caught:
        g.register_kernel(device, lambda x: x)
    assert str(caught.value) == (
        f"msg::g.register_kernel: device type {device!r} has a device index. A kernel serves "
        f"every device of its backend ({kind}:0, {kind}:1, ...), as in torch. Pass "
        f"{kind!r}, without the index."
    )

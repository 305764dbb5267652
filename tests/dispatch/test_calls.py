"""Calls: keys from tensors and devices, boxed kernels, redispatch, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from customop.dispatch import (
    Dispatcher,
    DispatchKey,
    DispatchKeySet,
    OperatorHandle,
    exclude_keys,
    fallthrough,
    include_keys,
)
from customop.exceptions import KernelOverrideWarning, MissingKernelError
from tests.dispatch.conftest import Doubles
from tests.dispatch.doubles import CudaArray, FakeArray, MetaArray

K = DispatchKey


def _op(d: Dispatcher, schema: str) -> OperatorHandle:
    d.register_def(schema)
    handle = d.find_op(schema.split("(", maxsplit=1)[0])
    assert handle is not None
    return handle


def _keys(*keys: DispatchKey) -> DispatchKeySet:
    return DispatchKeySet(*keys)


CPU = _keys(K.CPU)  # after masking the autograd fallthroughs
CUDA = _keys(K.CUDA)


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        pytest.param((np.ones(1), None, [], []), {}, CPU, id="one-tensor"),
        pytest.param((np.ones(1), CudaArray(), [], []), {}, _keys(K.CPU, K.CUDA), id="optional"),
        pytest.param((np.ones(1), None, [CudaArray()], []), {}, _keys(K.CPU, K.CUDA), id="list"),
        pytest.param(
            (np.ones(1), None, [], [None, MetaArray()]),
            {},
            _keys(K.CPU, K.Meta),
            id="optional-list",
        ),
        pytest.param((np.ones(1),), {"w": [CudaArray()]}, _keys(K.CPU, K.CUDA), id="keyword"),
    ],
)
def test_keys_come_from_every_tensor_position(
    dispatcher: Dispatcher,
    doubles: Doubles,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    expected: DispatchKeySet,
) -> None:
    op = _op(dispatcher, "t::f(Tensor x, Tensor? y=None, Tensor[] z=[], Tensor?[] w=[]) -> Tensor")
    assert op.dispatch_keyset(*args, **kwargs) == expected


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param({}, CPU, id="default-cpu"),
        pytest.param({"device": "cuda:1"}, CUDA, id="device-string"),
        pytest.param({"device": "meta"}, _keys(K.Meta), id="meta"),
        pytest.param({"tensors": [CudaArray()], "device": "meta"}, CUDA, id="tensor-beats-device"),
    ],
)
def test_device_arguments_decide_without_tensors(
    dispatcher: Dispatcher, doubles: Doubles, kwargs: dict[str, Any], expected: DispatchKeySet
) -> None:
    op = _op(dispatcher, "t::empty(Tensor[] tensors=[], *, Device? device=None) -> Tensor")
    assert op.dispatch_keyset(**kwargs) == expected


def test_device_objects_with_a_type_attribute(dispatcher: Dispatcher) -> None:
    class Device:
        type = "cuda"

    op = _op(dispatcher, "t::empty(*, Device device) -> Tensor")
    assert op.dispatch_keyset(device=Device()) == CUDA


def test_unknown_device_is_a_value_error(dispatcher: Dispatcher) -> None:
    op = _op(dispatcher, "t::empty(*, Device device) -> Tensor")
    with pytest.raises(ValueError) as caught:
        op(device="tpu")
    assert str(caught.value) == (
        "t::empty: device 'tpu' of argument 'device' is unknown. Ops with no tensor input "
        "dispatch on their Device argument, so its type must name a backend. Known device "
        "types: cpu, cuda, meta, privateuseone, privateusethree, privateusetwo."
    )


def test_non_array_at_a_tensor_position_is_a_type_error(dispatcher: Dispatcher) -> None:
    op = _op(dispatcher, "t::add(Tensor x, Tensor y) -> Tensor")
    with pytest.raises(TypeError) as caught:
        op(np.ones(1), [1, 2])
    assert str(caught.value) == (
        "t::add: argument 'y' is a tensor argument, but got list ([1, 2]). The dispatcher "
        "picks a kernel from the array type of every tensor argument. Pass an array of a "
        "registered type (numpy.ndarray is built in), or register the type with "
        "Dispatcher.register_array_type."
    )


def test_subclasses_use_their_base_registration(dispatcher: Dispatcher) -> None:
    class Sub(np.ndarray):
        pass

    op = _op(dispatcher, "t::neg(Tensor x) -> Tensor")
    dispatcher.register_impl("t::neg", "CPU", lambda x: "cpu")
    assert op(np.ones(1).view(Sub)) == "cpu"
    assert op(np.ones(1).view(Sub)) == "cpu"  # second call hits the cached resolution


def test_per_instance_keys(dispatcher: Dispatcher, doubles: Doubles) -> None:
    op = _op(dispatcher, "t::neg(Tensor x) -> Tensor")
    assert op.dispatch_keyset(FakeArray(K.CUDA)) == _keys(K.CUDA, K.Fake)


def test_boxed_kernel_gets_op_and_keyset_and_can_redispatch(dispatcher: Dispatcher) -> None:
    op = _op(dispatcher, "t::neg(Tensor x) -> Tensor")
    seen: list[tuple[OperatorHandle, DispatchKeySet]] = []

    def tracer(handle: OperatorHandle, keyset: DispatchKeySet, x: Any) -> Any:
        seen.append((handle, keyset))
        return ("traced", handle.redispatch(keyset.below(K.Tracer), x))

    dispatcher.register_impl("t::neg", "Tracer", tracer, boxed=True)
    dispatcher.register_impl("t::neg", "CPU", lambda x: "cpu")
    from customop.dispatch import include_keys

    with include_keys(K.Tracer):
        assert op(np.ones(1)) == ("traced", "cpu")
    assert seen == [(op, _keys(K.CPU, K.Tracer))]


def test_redispatch_applies_the_fallthrough_mask(dispatcher: Dispatcher) -> None:
    op = _op(dispatcher, "t::neg(Tensor x) -> Tensor")
    dispatcher.register_impl("t::neg", "CPU", lambda x: "cpu")
    assert op.redispatch(_keys(K.CPU, K.AutogradCPU), np.ones(1)) == "cpu"


def test_redispatch_passes_positional_and_keyword_arguments(dispatcher: Dispatcher) -> None:
    op = _op(dispatcher, "t::scale(Tensor x, *, float alpha=1.0) -> Tensor")
    dispatcher.register_impl("t::scale", "CPU", lambda *args, **kwargs: (len(args), kwargs))
    x = np.ones(1)
    assert op.redispatch(CPU, x) == (1, {})
    assert op.redispatch(CPU, x, alpha=2.0) == (1, {"alpha": 2.0})
    assert op(x, alpha=3.0) == (1, {"alpha": 3.0})


def test_redispatch_runs_the_kernel_registered_since_the_last_call() -> None:
    """A fallback that redispatches never runs a kernel that a registration replaced."""
    dispatcher = Dispatcher(autograd_fallthrough=False)
    op = _op(dispatcher, "t::neg(Tensor x) -> Tensor")

    def fallback(handle: OperatorHandle, keyset: DispatchKeySet, *args: Any, **kwargs: Any) -> Any:
        return handle.redispatch(keyset.below(K.AutogradCPU), *args, **kwargs)

    dispatcher.register_fallback(K.AutogradCPU, fallback)
    first = dispatcher.register_impl("t::neg", "CPU", lambda x: "first")
    x = np.ones(1)
    assert [op(x), op(x)] == ["first", "first"]
    with pytest.warns(KernelOverrideWarning):
        second = dispatcher.register_impl("t::neg", "CPU", lambda x: "second")
    assert [op(x), op.redispatch(_keys(K.CPU, K.AutogradCPU), x)] == ["second", "second"]
    second.remove()
    assert op(x) == "first"
    with dispatcher.register_impl("t::neg", "AutogradCPU", lambda x: "autograd"):
        assert op(x) == "autograd"  # the op's own kernel beats the fallback
    with dispatcher.register_impl("t::neg", "Fake", lambda x: "fake"), include_keys(K.Fake):
        assert op(x) == "fake"  # Fake is below AutogradCPU, above CPU
    first.remove()
    dispatcher.register_impl("t::neg", "CPU", fallthrough)
    with pytest.raises(MissingKernelError):
        op(x)  # CPU falls through now: no key is left below AutogradCPU


def test_missing_kernel_message(dispatcher: Dispatcher, doubles: Doubles) -> None:
    op = _op(dispatcher, "t::neg(Tensor x) -> Tensor")
    impl = dispatcher.register_impl("t::neg", "CPU", lambda x: "cpu")
    with pytest.raises(NotImplementedError) as caught:
        op(CudaArray())
    assert str(caught.value) == (
        "t::neg: no kernel for dispatch key 'CUDA' (t::neg does not have a kernel registered "
        "for cuda). The op has kernels for CPU, and no "
        "fallback serves CUDA. Register one with register_impl('t::neg', 'CUDA', fn), or a "
        "CompositeExplicitAutograd kernel that works on every backend.\n"
        "Keys with a kernel in the computed table:\n"
        f"CPU:                 <lambda> at {impl.source} [kernel]\n"
    )


def test_missing_fake_kernel_message(dispatcher: Dispatcher, doubles: Doubles) -> None:
    op = _op(dispatcher, "t::neg(Tensor x) -> Tensor")
    with pytest.raises(NotImplementedError) as caught:
        op(FakeArray())
    assert str(caught.value) == (
        "t::neg: no fake kernel (dispatch key 'Fake'). Fake tensors carry no data, so the op "
        "needs a kernel that computes only output shapes, dtypes and devices. Register one "
        "with customop.register_fake('t::neg', fn) or register_impl('t::neg', 'Fake', fn); a "
        "Meta or CompositeImplicitAutograd kernel also serves Fake. The op has no kernels at all."
    )
    assert (caught.value.op, caught.value.key) == ("t::neg", "Fake")  # type: ignore[attr-defined]


def test_nothing_left_after_exclusion(dispatcher: Dispatcher) -> None:
    op = _op(dispatcher, "t::neg(Tensor x) -> Tensor")
    dispatcher.register_impl("t::neg", "CPU", lambda x: "cpu")
    with exclude_keys(K.CPU), pytest.raises(NotImplementedError) as caught:
        op(np.ones(1))
    assert str(caught.value).startswith(
        "t::neg: no dispatch key is left for this call (its keys: AutogradCPU). Every key of "
        "the call falls through or is excluded, so no kernel can run. Register a kernel (not "
        "a fallthrough) for one of those keys, or leave the exclude_keys block. The op has "
        "kernels for CPU.\nKeys with a kernel in the computed table:\nCPU:"
    )


def test_kwargs_reach_the_kernel(dispatcher: Dispatcher) -> None:
    op = _op(dispatcher, "t::scale(Tensor x, *, float alpha=1.0) -> Tensor")
    dispatcher.register_impl("t::scale", "CPU", lambda x, alpha=1.0: x * alpha)
    assert op(x=np.ones(1), alpha=3.0).tolist() == [3.0]


def test_key_extractor_is_built_at_the_first_call(dispatcher: Dispatcher) -> None:
    dispatcher.register_def("t::lazy(Tensor x, Tensor y) -> Tensor")
    dispatcher.register_impl("t::lazy", "CPU", lambda x, y: "cpu")
    op = dispatcher.find_schema_or_throw("t::lazy")
    assert op._state[2] is op._entry  # the def did not build it: the entry stands in
    x = np.zeros(1)
    assert op(x, x) == "cpu"
    assert op._state[2] is not op._entry  # built once, and published
    assert op._state[2] is op._entry.extract
    assert op(x, x) == "cpu"
    with pytest.raises(TypeError, match="argument 'y' is a tensor argument, but got int"):
        op(x, 3)

"""Renamed PrivateUse backends and the array-type registry."""

from __future__ import annotations

import numpy as np
import pytest

from customop.dispatch import Dispatcher, DispatchKey, DispatchKeySet
from customop.exceptions import DispatchKeyError, RegistrationError
from tests.dispatch.doubles import DaskArray

K = DispatchKey


@pytest.fixture
def dask(dispatcher: Dispatcher) -> Dispatcher:
    dispatcher.rename_backend(K.PrivateUse1, "dask")
    dispatcher.register_array_type(DaskArray, K.PrivateUse1)
    dispatcher.register_def("t::neg(Tensor x) -> Tensor")
    return dispatcher


def test_renamed_backend_shows_in_names_dumps_and_errors(dask: Dispatcher) -> None:
    assert dask.key_name(K.PrivateUse1) == "dask"
    assert dask.key_name(K.AutogradPrivateUse1) == "AutogradDask"
    assert dask.parse_key("dask") is K.PrivateUse1
    assert dask.parse_key("AutogradDask") is K.AutogradPrivateUse1
    assert dask.parse_key("PrivateUse1") is K.PrivateUse1
    handle = dask.register_impl("t::neg", "dask", lambda x: "dask kernel")
    assert handle.description == "impl t::neg dask"
    table = dask.dump_table("t::neg").splitlines()
    assert table[2] == f"dask:                {'<lambda>'} at {handle.source} [kernel]"
    assert table[9].startswith("AutogradDask:")
    handle.remove()
    with pytest.raises(NotImplementedError, match="no kernel for dispatch key 'dask'"):
        dask.find_schema_or_throw("t::neg")(DaskArray())


def test_renamed_backend_is_a_device_type(dask: Dispatcher) -> None:
    dask.register_def("t::empty(*, Device device) -> Tensor")
    op = dask.find_schema_or_throw("t::empty")
    assert op.dispatch_keyset(device="dask:0") == DispatchKeySet(K.PrivateUse1)


def test_rename_is_undone_by_its_handle(dispatcher: Dispatcher) -> None:
    handle = dispatcher.rename_backend("PrivateUse2", "jax")
    assert dispatcher.snapshot().backend_names == {"PrivateUse2": "jax"}
    handle.remove()
    assert dispatcher.key_name(K.PrivateUse2) == "PrivateUse2"
    with pytest.raises(DispatchKeyError):
        dispatcher.parse_key("jax")


@pytest.mark.parametrize(
    ("key", "name", "message"),
    [
        pytest.param(
            "CPU",
            "dask",
            "rename_backend: 'CPU' is not a PrivateUse key. Only the PrivateUse backends are "
            "free for user backends to name. Pass PrivateUse1, PrivateUse2 or PrivateUse3.",
            id="not-private-use",
        ),
        pytest.param(
            "PrivateUse1",
            "my-backend",
            "rename_backend: backend name 'my-backend' is not an identifier. The name is used "
            "as a key name and a device type. Use letters, digits and underscores, like 'dask'.",
            id="not-identifier",
        ),
        pytest.param(
            "PrivateUse1",
            "cuda",
            "rename_backend: backend name 'cuda' is already a key name or device type. Names "
            "must be unique, or parsing a key name would be ambiguous. Pick another name.",
            id="taken",
        ),
    ],
)
def test_rename_validation(dispatcher: Dispatcher, key: str, name: str, message: str) -> None:
    with pytest.raises(DispatchKeyError) as caught:
        dispatcher.rename_backend(key, name)
    assert str(caught.value) == message


def test_second_rename_names_both(dispatcher: Dispatcher) -> None:
    first = dispatcher.rename_backend("PrivateUse1", "dask")
    with pytest.raises(RegistrationError) as caught:
        dispatcher.rename_backend("PrivateUse1", "ray")
    line = int(first.source.split(":")[1]) + 2
    assert str(caught.value) == (
        f"rename_backend: PrivateUse1 is already named 'dask', at {first.source}; renamed "
        f"again to 'ray' at test_backends.py:{line}. A backend has one name, or dumps and key "
        "names would disagree. Remove the first rename's handle first."
    )


def test_array_type_registration_round_trip(dispatcher: Dispatcher) -> None:
    dispatcher.register_def("t::neg(Tensor x) -> Tensor")
    op = dispatcher.find_schema_or_throw("t::neg")
    handle = dispatcher.register_array_type(DaskArray, DispatchKeySet(K.PrivateUse1, K.Python))
    assert op.dispatch_keyset(DaskArray()) == DispatchKeySet(K.PrivateUse1, K.Python)
    info = dispatcher.snapshot().array_types
    assert [(a.type.rsplit(".", 1)[1], a.keys) for a in info] == [
        ("ndarray", ("CPU", "AutogradCPU")),
        ("DaskArray", ("PrivateUse1", "Python")),
    ]
    handle.remove()
    with pytest.raises(TypeError, match="argument 'x' is a tensor argument, but got DaskArray"):
        op(DaskArray())


def test_array_type_conflicts_and_validation(dispatcher: Dispatcher) -> None:
    [numpy_default, _] = dispatcher.default_registrations
    with pytest.raises(RegistrationError) as caught:
        dispatcher.register_array_type(np.ndarray, K.CUDA)
    assert str(caught.value) == (
        "register_array_type: ndarray is already registered, at <customop default>; again at "
        f"test_backends.py:{caught.traceback[0].lineno + 1}. An array type has one set of "
        "dispatch keys, or calls could not pick a kernel. Remove the first handle first."
    )
    numpy_default.remove()
    dispatcher.register_array_type(np.ndarray, K.CUDA)
    with pytest.raises(DispatchKeyError, match="'Autograd' is an alias key"):
        dispatcher.register_array_type(DaskArray, K.Autograd)
    with pytest.raises(DispatchKeyError, match="the key set for DaskArray is empty"):
        dispatcher.register_array_type(DaskArray, DispatchKeySet())
    with pytest.raises(TypeError, match="expected a class or its qualified name, got 3"):
        dispatcher.register_array_type(3, K.CPU)  # type: ignore[arg-type]


def test_dynamic_keys_must_return_a_key_set(dispatcher: Dispatcher) -> None:
    dispatcher.register_array_type(DaskArray, lambda array: "CPU")  # type: ignore[arg-type]
    dispatcher.register_def("t::neg(Tensor x) -> Tensor")
    with pytest.raises(TypeError) as caught:
        dispatcher.find_schema_or_throw("t::neg")(DaskArray())
    assert str(caught.value) == (
        "t::neg: the key function registered for DaskArray returned 'CPU' for argument 'x'. "
        "A call needs a non-empty DispatchKeySet per tensor. Fix the function passed to "
        "Dispatcher.register_array_type."
    )

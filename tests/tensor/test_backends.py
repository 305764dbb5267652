"""register_backend, adapter lookup, device_of and device-driven key functions."""

from __future__ import annotations

import numpy as np
import pytest

from customop.dispatch import Dispatcher, DispatchKey, DispatchKeySet
from customop.exceptions import DispatchKeyError, RegistrationError
from customop.tensor import Device, FakeTensor, adapter_for, device_of, register_backend
from customop.tensor._backends import backend_key, device_keys_fn
from tests.tensor.doubles import SubToyArray, ToyArray

K = DispatchKey


@pytest.fixture
def toy(dispatcher: Dispatcher) -> Dispatcher:
    """`dispatcher` with PrivateUse1 named "toy" and a `t::which` op with a kernel per backend."""
    dispatcher.rename_backend(K.PrivateUse1, "toy")
    dispatcher.register_def("t::which(Tensor x) -> str")
    for key in (K.CPU, K.CUDA, K.PrivateUse1, K.Meta, K.Fake):
        dispatcher.register_impl("t::which", key, lambda x, name=key.name: name)
    return dispatcher


def test_user_backend_dispatches_to_its_key(toy: Dispatcher) -> None:
    handle = register_backend(ToyArray, "toy", "PrivateUse1", dispatcher=toy)
    which = toy.find_schema_or_throw("t::which")
    assert which(ToyArray([1.0])) == "PrivateUse1"
    assert which(SubToyArray([1.0])) == "PrivateUse1"
    assert which.dispatch_keyset(ToyArray([1.0])) == DispatchKeySet(K.PrivateUse1)
    assert handle.description == "backend tests.tensor.doubles.ToyArray"
    assert handle.source.startswith("test_backends.py:")
    adapter = adapter_for(ToyArray, dispatcher=toy)
    assert adapter is not None
    assert (adapter.array_type, adapter.device_type) == (ToyArray, "toy")
    assert device_of(SubToyArray([1.0], index=3), dispatcher=toy) == Device("toy")
    handle.remove()
    assert adapter_for(ToyArray, dispatcher=toy) is None
    with pytest.raises(TypeError, match=r"argument 'x' is a tensor argument, but got ToyArray"):
        which(ToyArray([1.0]))


def test_device_function_gives_the_index(toy: Dispatcher) -> None:
    with register_backend(ToyArray, "toy", device=lambda a: f"toy:{a.index}", dispatcher=toy):
        assert device_of(ToyArray([1], index=2), dispatcher=toy) == Device("toy:2")


def test_device_function_must_stay_on_its_type(toy: Dispatcher) -> None:
    register_backend(ToyArray, "toy", device=lambda a: "cuda:0", dispatcher=toy)
    with pytest.raises(ValueError) as info:
        device_of(ToyArray([1]), dispatcher=toy)
    assert str(info.value) == (
        "device_of: the device function of ToyArray returned 'cuda:0', but the type is "
        "registered for device type 'toy'. An array type has one backend, so its instances "
        "share one device type. Fix the device= function passed to register_backend."
    )


def test_registration_by_name_imports_nothing(toy: Dispatcher) -> None:
    with register_backend("tests.tensor.doubles.ToyArray", "cuda", dispatcher=toy):
        assert toy.find_schema_or_throw("t::which")(ToyArray([1])) == "CUDA"
        assert device_of(ToyArray([1]), dispatcher=toy) == Device("cuda")


def test_builtin_adapters(dispatcher: Dispatcher) -> None:
    assert device_of(np.zeros(2), dispatcher=dispatcher) == Device("cpu")
    assert device_of(FakeTensor((2,), device="cuda:1")) == Device("cuda:1")
    numpy_adapter = adapter_for(np.zeros(2), dispatcher=dispatcher)
    assert numpy_adapter is not None and numpy_adapter.array_type == "numpy.ndarray"
    assert adapter_for(3, dispatcher=dispatcher) is None


def test_registration_conflicts_leave_no_trace(toy: Dispatcher) -> None:
    register_backend(ToyArray, "toy", dispatcher=toy)
    with pytest.raises(RegistrationError, match=r"^register_array_type: ToyArray is already"):
        register_backend(ToyArray, "cuda", dispatcher=toy)
    adapter = adapter_for(ToyArray, dispatcher=toy)
    assert adapter is not None and adapter.device_type == "toy"


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        pytest.param(
            (ToyArray, "dask"),
            {},
            DispatchKeyError,
            "register_backend: device type 'dask' is not a backend of this dispatcher. A device "
            "type must name a backend to pick kernels for it; known: cpu, cuda, meta, "
            "privateuseone, privateusethree, privateusetwo, toy. Rename a PrivateUse backend "
            "first: dispatcher.rename_backend('PrivateUse1', 'dask').",
            id="unknown-device-type",
        ),
        pytest.param(
            (ToyArray, "toy", "CUDA"),
            {},
            DispatchKeyError,
            "register_backend: device type 'toy' dispatches to 'toy', not 'CUDA'. A backend's "
            "device type and key go together. Pass key='toy' or leave key out.",
            id="key-mismatch",
        ),
        pytest.param(
            (ToyArray, "cuda:1"),
            {},
            ValueError,
            "register_backend: device type 'cuda:1' is not a device type. Every instance of the "
            "array type is on this backend; an instance's index comes from device=. Pass a type "
            "such as 'cpu', 'cuda' or a renamed backend's name, without an index.",
            id="index",
        ),
        pytest.param(
            ("ToyArray", "toy"),
            {},
            TypeError,
            "register_backend: expected a class or its qualified name, got 'ToyArray'. Calls "
            "look up backends by the type of each tensor argument. Pass the array class, or a "
            "name such as 'dask.array.Array'.",
            id="unqualified-name",
        ),
        pytest.param(
            (ToyArray, "toy"),
            {"empty": "np.empty"},
            TypeError,
            "register_backend: empty='np.empty' is not callable. customop calls it for each "
            "array it handles. Pass a function, or None.",
            id="empty-not-callable",
        ),
    ],
)
def test_register_backend_errors(
    toy: Dispatcher,
    args: tuple[object, ...],
    kwargs: dict[str, object],
    error: type[Exception],
    message: str,
) -> None:
    with pytest.raises(error) as info:
        register_backend(*args, **kwargs, dispatcher=toy)  # type: ignore[arg-type]
    assert str(info.value) == message
    assert adapter_for(ToyArray, dispatcher=toy) is None


def test_device_of_unregistered(dispatcher: Dispatcher) -> None:
    with pytest.raises(TypeError) as info:
        device_of([1, 2], dispatcher=dispatcher)
    assert str(info.value) == (
        "device_of: list is not an array type of a registered backend. customop learns an "
        "array type's device from its backend adapter. Pass a numpy array, a FakeTensor, or "
        "register the type with register_backend."
    )


@pytest.mark.parametrize(
    ("device_type", "key"),
    [
        pytest.param("cpu", K.CPU, id="cpu"),
        pytest.param("cuda", K.CUDA, id="cuda"),
        pytest.param("meta", K.Meta, id="meta"),
        pytest.param("privateuseone", K.PrivateUse1, id="privateuse"),
        pytest.param("toy", K.PrivateUse1, id="renamed"),
        pytest.param("mps", None, id="unknown"),
    ],
)
def test_backend_key(toy: Dispatcher, device_type: str, key: DispatchKey | None) -> None:
    assert backend_key(device_type, toy) is key


def test_device_keys_fn_follows_renames(dispatcher: Dispatcher) -> None:
    keys = device_keys_fn(dispatcher, lambda array: array.kind, "Thing")

    class Thing:
        kind = "jax"

    with pytest.raises(DispatchKeyError, match=r"^Thing: device type 'jax' is not a backend"):
        keys(Thing())
    with dispatcher.rename_backend("PrivateUse2", "jax"):
        assert keys(Thing()) == DispatchKeySet(K.PrivateUse2, K.AutogradPrivateUse2)
    with pytest.raises(DispatchKeyError):
        keys(Thing())  # the cache forgot the rename with it

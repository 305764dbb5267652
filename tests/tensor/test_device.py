"""Device: parsing, equality, printing, errors, and schema inference."""

from __future__ import annotations

import copy
import pickle
from types import SimpleNamespace

import pytest

from customop.schema import infer_schema
from customop.tensor import Device, Tensor


@pytest.mark.parametrize(
    ("text", "kind", "index"),
    [
        pytest.param("cpu", "cpu", None, id="cpu"),
        pytest.param("cpu:0", "cpu", 0, id="cpu-0"),
        pytest.param("cuda", "cuda", None, id="cuda"),
        pytest.param("cuda:1", "cuda", 1, id="cuda-1"),
        pytest.param("cuda:10", "cuda", 10, id="cuda-10"),
        pytest.param("meta", "meta", None, id="meta"),
        pytest.param("privateuseone:0", "privateuseone", 0, id="privateuse"),
        pytest.param("dask", "dask", None, id="renamed-backend"),
    ],
)
def test_parses_type_and_index(text: str, kind: str, index: int | None) -> None:
    device = Device(text)
    assert (device.type, device.index) == (kind, index)
    assert str(device) == text
    assert repr(device) == f"Device({text!r})"


def test_other_spellings() -> None:
    assert Device("cuda", 1) == Device("cuda:1")
    assert Device(Device("cuda:1")) == Device("cuda:1")
    assert Device(SimpleNamespace(type="cuda", index=2)) == Device("cuda:2")
    assert Device(SimpleNamespace(type="cpu", index=None)) == Device("cpu")


def test_equality_and_hash_follow_torch() -> None:
    assert Device("cuda") != Device("cuda:0")
    assert Device("cpu") != "cpu"  # as torch.device("cpu") != "cpu"
    assert len({Device("cuda:1"), Device("cuda", 1), Device("cpu")}) == 2


def test_immutable_and_picklable() -> None:
    device = Device("cuda:1")
    with pytest.raises(AttributeError):
        device.type = "cpu"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(device)) == device
    assert copy.deepcopy(device) == device


def test_has_the_attributes_dispatch_reads() -> None:
    # The dispatcher reads `.type` of Device arguments; the library's checks too.
    assert Device("cuda:1").type == "cuda"
    assert not isinstance(Device("cpu"), Tensor)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("cuda:", id="colon-no-index"),
        pytest.param("cuda:x", id="letter-index"),
        pytest.param("cuda:-1", id="negative-index"),
        pytest.param("cuda:01", id="leading-zero"),
        pytest.param("cuda: 1", id="space"),
        pytest.param("my-gpu", id="not-identifier"),
        pytest.param("1cuda", id="digit-first"),
    ],
)
def test_bad_text(text: str) -> None:
    message = (
        f"Device: {text!r} is not a device string. A device is a type with an optional index, "
        "like 'cpu', 'cuda' or 'cuda:1'. Write '<type>' or '<type>:<index>', with an "
        "identifier type and a non-negative index without leading zeros."
    )
    with pytest.raises(ValueError) as info:
        Device(text)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        pytest.param(
            ("cuda:1", 2),
            ValueError,
            "Device: 'cuda:1' already has an index, and index=2 was passed too. A device has "
            "one index. Pass either the text with its index or Device('cuda', 2).",
            id="index-twice",
        ),
        pytest.param(
            ("cuda", -1),
            ValueError,
            "Device: index -1 is not a non-negative int. Indices number the devices of one "
            "type from 0. Pass e.g. Device('cuda', 0).",
            id="negative-index",
        ),
        pytest.param(
            ("cuda", True),
            ValueError,
            "Device: index True is not a non-negative int. Indices number the devices of one "
            "type from 0. Pass e.g. Device('cuda', 0).",
            id="bool-index",
        ),
        pytest.param(
            (3,),
            TypeError,
            "Device: expected a device string or an object with a str .type, got int 3. A "
            "device names the backend an array lives on. Pass e.g. 'cpu', 'cuda:1' or a "
            "torch.device.",
            id="not-a-device",
        ),
    ],
)
def test_bad_arguments(args: tuple[object, ...], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        Device(*args)  # type: ignore[arg-type]
    assert str(info.value) == message


CUDA1 = Device("cuda:1")


def test_infers_as_schema_device() -> None:
    def f(x: Tensor, device: Device = CUDA1) -> Tensor:
        return x

    assert str(infer_schema(f, mutates_args=())) == '(Tensor x, Device device="cuda:1") -> Tensor'


def test_torch_device_converts() -> None:
    torch = pytest.importorskip("torch")
    assert Device(torch.device("cuda:1")) == Device("cuda:1")
    assert Device(torch.device("meta")) == Device("meta")

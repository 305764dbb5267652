"""The torch and cupy adapters: registered by name, served once arrays show up.

torch tests run with torch installed and skip cleanly without it; cupy is
simulated with a class named like cupy's ndarray and a stand-in module.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from customop.dispatch import Dispatcher, DispatchKey, DispatchKeySet
from customop.library import Library, Ops
from customop.tensor import (
    Device,
    adapter_for,
    device_of,
    empty,
    empty_like,
    install_backends,
    new_empty,
)
from customop.tensor._backends import adapter_table
from customop.tensor._lazy import CUPY_NAMES, TORCH_NAME

ROOT = Path(__file__).parent.parent.parent
K = DispatchKey


@pytest.fixture
def which(dispatcher: Dispatcher) -> Any:
    """An op answering which backend's kernel ran."""
    dispatcher.register_def("t::which(Tensor x) -> str")
    for key in (K.CPU, K.CUDA, K.Meta):
        dispatcher.register_impl("t::which", key, lambda x, name=key.name: name)
    return dispatcher.find_schema_or_throw("t::which")


def test_adapters_are_registered_by_name(dispatcher: Dispatcher) -> None:
    infos = {info.type: info for info in dispatcher.snapshot().array_types}
    assert {TORCH_NAME, *CUPY_NAMES} <= set(infos)
    assert infos[TORCH_NAME].keys is None  # per instance: from the tensor's device
    assert infos[CUPY_NAMES[0]].keys == ("CUDA", "AutogradCUDA")
    assert infos[TORCH_NAME].source == "<customop default>"


# -- torch -------------------------------------------------------------------------


def test_torch_tensors_dispatch_on_their_device(which: Any, dispatcher: Dispatcher) -> None:
    torch = pytest.importorskip("torch")
    cpu, meta = torch.ones(2), torch.empty(2, device="meta")
    assert [which(cpu), which(meta), which(cpu)] == ["CPU", "Meta", "CPU"]
    assert which(torch.nn.Parameter(torch.ones(1))) == "CPU"  # a subclass
    assert device_of(cpu, dispatcher=dispatcher) == Device("cpu")
    assert device_of(meta, dispatcher=dispatcher) == Device("meta")


def test_torch_renamed_privateuse_device_type(dispatcher: Dispatcher) -> None:
    pytest.importorskip("torch")
    keys = dispatcher._backends.lookup(sys.modules["torch"].Tensor)
    assert callable(keys)
    tensor = SimpleNamespace(device=SimpleNamespace(type="privateuseone", index=0))
    assert keys(tensor) == DispatchKeySet(K.PrivateUse1, K.AutogradPrivateUse1)


def test_torch_factories(dispatcher: Dispatcher) -> None:
    torch = pytest.importorskip("torch")
    x = torch.ones(2, 3, dtype=torch.int64)
    like = empty_like(x, dispatcher=dispatcher)
    assert (type(like), like.shape, like.dtype, like.device.type) == (
        torch.Tensor, (2, 3), torch.int64, "cpu")  # fmt: skip
    meta = new_empty(x, (4,), dtype="float16", device="meta", dispatcher=dispatcher)
    assert (meta.shape, meta.dtype, meta.device.type) == ((4,), torch.float16, "meta")


def test_torch_device_through_library_call_path(dispatcher: Dispatcher) -> None:
    torch = pytest.importorskip("torch")
    lib = Library("t2", "DEF", dispatcher=dispatcher)
    lib.define("which(Tensor x) -> str")
    lib.impl("which", lambda x: "CPU", "CPU")
    lib.impl("which", lambda x: "Meta", "Meta")
    which = Ops(dispatcher).t2.which.default
    assert [which(torch.ones(2)), which(torch.empty(2, device="meta"))] == ["CPU", "Meta"]


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_customop_imports_neither_torch_nor_cupy() -> None:
    out = _run("""
        import sys, customop
        print(sorted(m for m in ("torch", "cupy") if m in sys.modules))
    """)
    assert out == "[]\n"


def test_torch_imported_after_customop_dispatches() -> None:
    pytest.importorskip("torch")
    out = _run("""
        import customop
        import torch

        @customop.custom_op("lazy::which", mutates_args=(), device_types="cpu")
        def which(x: torch.Tensor) -> torch.Tensor:
            print("cpu kernel")
            return x.clone()

        @which.register_kernel("meta")
        def _(x: torch.Tensor) -> torch.Tensor:
            print("meta kernel")
            return x.clone()

        print(which(torch.empty(2, device="meta")).device)
    """)
    assert out == "meta kernel\nmeta\n"


# -- cupy (simulated) ----------------------------------------------------------------


class FakeCupyArray:
    """Named like cupy's ndarray class, so the by-name registration serves it."""

    def __init__(self, shape: tuple[int, ...], device_id: int = 0) -> None:
        self.shape = shape
        self.dtype = np.dtype("float32")
        self.device = SimpleNamespace(id=device_id)


FakeCupyArray.__module__ = "cupy._core.core"
FakeCupyArray.__qualname__ = "ndarray"


@contextmanager
def _cuda_device(index: int) -> Any:
    yield index


def test_cupy_arrays_are_cuda(
    which: Any, dispatcher: Dispatcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    array = FakeCupyArray((2, 3), device_id=1)
    assert which(array) == "CUDA"
    assert device_of(array, dispatcher=dispatcher) == Device("cuda:1")
    made: list[tuple[object, ...]] = []
    cupy = SimpleNamespace(
        empty=lambda shape, dtype: made.append((shape, dtype)) or "cupy array",
        cuda=SimpleNamespace(Device=_cuda_device),
    )
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    assert empty_like(array, dispatcher=dispatcher) == "cupy array"
    assert made == [((2, 3), np.dtype("float32"))]
    with pytest.raises(ValueError, match=r"^empty: cupy arrays live on cuda devices, not on 'cpu'"):
        empty_like(array, device="cpu", dispatcher=dispatcher)
    # With cupy imported, it is the backend that allocates on "cuda" without a reference.
    assert empty((4,), device="cuda:1", dispatcher=dispatcher) == "cupy array"
    assert made[-1] == ((4,), np.dtype("float32"))


def test_user_registration_wins() -> None:
    fresh = Dispatcher()
    fresh.register_array_type(TORCH_NAME, K.CPU)
    with install_backends(fresh):
        assert fresh._backends.exact[TORCH_NAME] == DispatchKeySet(K.CPU, K.AutogradCPU)
        assert TORCH_NAME not in adapter_table(fresh)
        assert adapter_for(FakeCupyArray, dispatcher=fresh) is not None
    assert adapter_for(FakeCupyArray, dispatcher=fresh) is None

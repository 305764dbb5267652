"""C++ kernel tests: the test libraries compile once per run, into a temporary folder.

Everything here skips (with the reason) where no C++ compiler or no TVM-FFI is
installed. `kernels.cpp` holds every kernel shape the tests call; `mismatch.cpp`
an IMPL-only block for the dangling-impl and schema-mismatch cases.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent

if shutil.which("c++") is None and shutil.which("g++") is None:
    pytest.skip("no C++ compiler (c++ / g++) on this machine", allow_module_level=True)
if importlib.util.find_spec("tvm_ffi") is None:
    pytest.skip("apache-tvm-ffi is not installed (customop[cpp])", allow_module_level=True)

from customop.cpp._build import build  # noqa: E402


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cppbuild")


@pytest.fixture(scope="session")
def kernels_so(build_dir: Path) -> Path:
    return build("cpptest", [HERE / "kernels.cpp"], build_directory=build_dir)


@pytest.fixture(scope="session")
def mismatch_so(build_dir: Path) -> Path:
    return build("cppimpl", [HERE / "mismatch.cpp"], build_directory=build_dir)


@pytest.fixture
def ops(kernels_so: Path) -> Iterator[Any]:
    """``customop.ops.cpptest`` with the library loaded in ``customop.dispatcher``, then removed."""
    import customop

    handle = customop.load_library(kernels_so)
    try:
        yield customop.ops.cpptest
    finally:
        handle.remove()

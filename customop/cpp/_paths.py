"""Where the headers are, and the compiler flags a kernel library needs.

TVM-FFI is found by its package folder (``importlib.util.find_spec``), so
building flags never imports it (its import loads torch when torch is there).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from customop.exceptions import BuildError

__all__ = ["build_flags", "include_path", "tvm_ffi_root"]

_HERE = Path(__file__).parent


def include_path() -> str:
    """The folder to put on the include path for ``#include <customop/library.h>``.

    As ``pybind11.get_include()``: pass it to your build (``-I``), along with
    TVM-FFI's include folder (``tvm_ffi.libinfo.find_include_path()``).

    Returns:
        The absolute path of customop's C++ headers.
    """
    return str(_HERE / "include")


def tvm_ffi_root() -> Path:
    spec = importlib.util.find_spec("tvm_ffi")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError(
            "customop.cpp: the package apache-tvm-ffi is not installed. C++ kernels are "
            "called through TVM-FFI's C ABI. Install customop[cpp] (pip install "
            "'customop[cpp]')."
        )
    return Path(next(iter(spec.submodule_search_locations)))


def build_flags() -> tuple[list[str], list[str]]:
    """(compile flags, link flags) for a library of customop kernels."""
    root = tvm_ffi_root()
    lib = root / "lib"
    cflags = ["-std=c++17", "-O2", "-fPIC", "-fvisibility=hidden", f"-I{include_path()}"]
    cflags.append(f"-I{root / 'include'}")
    ldflags = ["-shared", f"-L{lib}", "-ltvm_ffi", f"-Wl,-rpath,{lib}"]
    return cflags, ldflags

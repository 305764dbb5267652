"""Kernels in C++: compiled libraries registered with the TORCH_LIBRARY-style macros.

``#include <customop/library.h>`` (headers at `include_path`) gives
``CUSTOMOP_LIBRARY``, ``CUSTOMOP_LIBRARY_FRAGMENT`` and
``CUSTOMOP_LIBRARY_IMPL``; `load` compiles sources into a cached library and
`load_library` registers a built one; `kernel` gives one kernel of a built
library for ``Library.impl`` (what codegen's ``cpp:`` kernels use). Calls reach the kernels through
TVM-FFI's C ABI with DLPack tensors (the ``customop[cpp]`` extra). See
``docs/cpp.md``.

Importing this package imports neither a compiler nor TVM-FFI: they load with
the first build or library.
"""

from customop.cpp._build import load
from customop.cpp._load import load_library
from customop.cpp._lookup import kernel
from customop.cpp._paths import include_path

__all__ = [
    "include_path",
    "kernel",
    "load",
    "load_library",
]

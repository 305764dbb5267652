"""C++ kernels through customop ops vs nanobind and TORCH_LIBRARY, in one run.

    python benchmarks/bench_cpp.py

One trivial kernel, ``out = a + b`` on 16 float32 elements (a new output
each call), built three ways from the same loop:

* a customop library (``<customop/library.h>``, ``customop.cpp.load``), called
  as a customop op on numpy arrays and on torch CPU tensors;
* a nanobind module binding the kernel directly (``nb::ndarray`` in, a new
  numpy array out), called from Python: the floor for numpy;
* a ``TORCH_LIBRARY`` op built with ``torch.utils.cpp_extension.load`` against
  the installed torch's headers, called through ``torch.ops.ns.name``.

Targets (issue #25 §5): the customop op on numpy <= 2x nanobind; on torch
tensors >= 3x faster than the TORCH_LIBRARY op. Beside them, the floor: the
same compiled kernel's TVM-FFI function called directly with the same arrays
(``tvm_ffi.load_module(path).get_function("customop_kernel")(0)``, no customop
in between), so the ratio customop could reach at best is printed too. Then the first build time of
a one-kernel library and its cached load (in this process, and in a new one).
The numpy rows run first; then the op is registered in torch with
``customop.torch.register`` (as a torch user does for ``torch.compile``), so
eager calls on torch tensors take that adapter's call code.

NOTE: as in bench_dispatch.py, every call is timed in ROUNDS rounds of all
calls one after another, and a call's figure is its best round.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see bench_dispatch.py

import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from _timing import Timed, best_ns

ROUNDS = 40
N = 20_000

CUSTOMOP_SOURCE = r"""
#include <customop/library.h>
customop::Tensor add(customop::TensorView a, customop::TensorView b) {
  customop::Tensor out = customop::empty_like(a);
  const float* x = a.data_ptr<float>(); const float* y = b.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < a.numel(); ++i) o[i] = x[i] + y[i];
  return out;
}
CUSTOMOP_LIBRARY(benchcpp, m) { m.def("add(Tensor a, Tensor b) -> Tensor"); }
CUSTOMOP_LIBRARY_IMPL(benchcpp, CPU, m) { m.impl("add", &add); }
"""

NANOBIND_SOURCE = r"""
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
namespace nb = nanobind;
using A = nb::ndarray<float, nb::c_contig, nb::device::cpu>;
NB_MODULE(bench_nb, m) {
  m.def("add", [](A a, A b) {
    size_t n = a.size(); float* o = new float[n];
    const float* x = a.data(); const float* y = b.data();
    for (size_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
    nb::capsule owner(o, [](void* p) noexcept { delete[] (float*)p; });
    return nb::ndarray<nb::numpy, float>(o, {a.shape(0)}, owner);
  });
}
"""

TORCH_SOURCE = r"""
#include <torch/library.h>
#include <ATen/ATen.h>
at::Tensor add(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor out = at::empty_like(a);
  const float* x = a.data_ptr<float>(); const float* y = b.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < a.numel(); ++i) o[i] = x[i] + y[i];
  return out;
}
TORCH_LIBRARY(benchcpp_torch, m) { m.def("add(Tensor a, Tensor b) -> Tensor"); }
TORCH_LIBRARY_IMPL(benchcpp_torch, CPU, m) { m.impl("add", &add); }
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _nanobind(folder: Path) -> object:
    import importlib.util

    import nanobind

    root = Path(nanobind.__file__).parent
    target = folder / f"bench_nb{sysconfig.get_config_var('EXT_SUFFIX')}"
    command = [
        "c++", "-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden",
        f"-I{root / 'include'}", f"-I{root / 'ext' / 'robin_map' / 'include'}",
        f"-I{sysconfig.get_paths()['include']}",
        str(_write(folder, "bench_nb.cpp", NANOBIND_SOURCE)), str(root / "src" / "nb_combined.cpp"),
        "-o", str(target),
    ]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True)
    spec = importlib.util.spec_from_file_location("bench_nb", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _torch_library(folder: Path) -> bool:
    from torch.utils import cpp_extension

    source = _write(folder, "bench_torch_lib.cpp", TORCH_SOURCE)
    cpp_extension.load(
        "bench_torch_lib", [str(source)], is_python_module=False, build_directory=str(folder)
    )
    return True


def _report(ns: dict[str, float]) -> None:
    """The rows, the targets' ratios, and the floor's."""
    for name, value in ns.items():
        print(f"{name:40s} {value:9,.0f} ns")
    numpy_ratio = ns["customop op, numpy"] / ns["nanobind, numpy"]
    torch_ratio = ns["torch.ops (TORCH_LIBRARY), torch"] / ns["customop op, torch"]
    print(f"customop/nanobind on numpy: {numpy_ratio:.2f}x (target <= 2x)")
    print(f"TORCH_LIBRARY/customop on torch: {torch_ratio:.2f}x faster (target >= 3x)")
    floor = ns["floor: tvm_ffi direct, torch"]
    ceiling = ns["torch.ops (TORCH_LIBRARY), torch"] / floor
    over = ns["customop op, torch"] - floor
    print(f"floor: TORCH_LIBRARY/tvm_ffi direct on torch: {ceiling:.2f}x faster (the best any")
    print(f"  caller of the TVM-FFI function can reach); customop over the floor: {over:,.0f} ns")


def main() -> None:
    import numpy as np
    import torch

    import customop
    from customop.cpp import _build

    folder = Path(tempfile.mkdtemp(prefix="bench_cpp_"))
    source = _write(folder, "benchcpp.cpp", CUSTOMOP_SOURCE)
    start = time.perf_counter()
    path = _build.build("benchcpp", source, build_directory=folder)
    first_build = time.perf_counter() - start
    start = time.perf_counter()
    handle = customop.cpp.load("benchcpp", source, build_directory=folder)
    first_load = time.perf_counter() - start
    handle.remove()
    start = time.perf_counter()
    handle = customop.cpp.load("benchcpp", source, build_directory=folder)
    cached_load = time.perf_counter() - start
    code = (
        "import time, sys; t = time.perf_counter(); import customop.cpp as c; "
        f"c.load('benchcpp', {str(source)!r}, build_directory={str(folder)!r}); "
        "print(time.perf_counter() - t)"
    )
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    fresh_load = float(fresh.stdout.strip() or "nan")

    start = time.perf_counter()
    nb = _nanobind(folder)
    nanobind_build = time.perf_counter() - start
    start = time.perf_counter()
    _torch_library(folder)
    torch_build = time.perf_counter() - start

    import tvm_ffi

    direct = tvm_ffi.load_module(str(path)).get_function("customop_kernel")(0)
    x = np.arange(16, dtype=np.float32)
    t = torch.arange(16, dtype=torch.float32)
    op = customop.ops.benchcpp.add.default
    torch_op = torch.ops.benchcpp_torch.add
    for got in (op(x, x), nb.add(x, x), torch_op(t, t).numpy()):  # type: ignore[attr-defined]
        np.testing.assert_array_equal(got, x + x)
    numpy_rows: Timed = {
        "nanobind, numpy": (lambda: nb.add(x, x), N),  # type: ignore[attr-defined]
        "customop op, numpy": (lambda: op(x, x), N),
        "customop.ops.benchcpp.add, numpy": (lambda: customop.ops.benchcpp.add(x, x), N),
        "floor: tvm_ffi direct, numpy": (lambda: np.from_dlpack(direct(x, x)), N),
    }
    ns = best_ns(numpy_rows, ROUNDS)
    import customop.torch

    # torch users register the op in torch (for torch.compile); eager calls on plain torch
    # tensors then take customop.torch's call code (see bench_torch.py).
    torch_handle = customop.torch.register("benchcpp")
    np.testing.assert_array_equal(op(t, t).numpy(), x + x)
    torch_rows: Timed = {
        "customop op, torch": (lambda: op(t, t), N),
        "torch.ops (TORCH_LIBRARY), torch": (lambda: torch_op(t, t), N),
        "floor: tvm_ffi direct, torch": (lambda: direct(t, t), N),
    }
    ns.update(best_ns(torch_rows, ROUNDS))
    _report(ns)
    print(f"first build of a one-kernel library: {first_build:.2f} s (nanobind module "
          f"{nanobind_build:.2f} s, torch extension {torch_build:.2f} s)")  # fmt: skip
    print(f"first load in this process (imports TVM-FFI): {first_load * 1e3:.0f} ms")
    print(f"cached load, library loaded before: {cached_load * 1e3:.1f} ms")
    print(f"cached load in a new process (import + load): {fresh_load * 1e3:.0f} ms")
    print(f"library: {path}")
    torch_handle.remove()
    handle.remove()


if __name__ == "__main__":
    main()

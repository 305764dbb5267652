"""load_library: bad libraries, conflicts, dangling impls, removal and threads."""

from __future__ import annotations

import gc
import subprocess
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import customop
from customop import Dispatcher, Library
from customop.cpp import load_library
from customop.exceptions import (
    MissingKernelError,
    RegistrationError,
    UnknownOperatorError,
)

HERE = Path(__file__).parent


def _plain_library(folder: Path, name: str, code: str) -> Path:
    """A shared object without customop's header (fast: plain C)."""
    source = folder / f"{name}.c"
    source.write_text(code)
    target = folder / f"{name}.so"
    subprocess.run(["cc", "-shared", "-fPIC", str(source), "-o", str(target)], check=True)
    return target


def test_a_library_that_is_not_a_customop_library(tmp_path: Path) -> None:
    path = _plain_library(tmp_path, "plain", "int answer(void) { return 42; }\n")
    with pytest.raises(RegistrationError, match=r"plain.so is not a customop library") as caught:
        load_library(path, dispatcher=Dispatcher())
    assert "#include <customop/library.h>" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_missing_symbol_names_it_and_the_fix(tmp_path: Path) -> None:
    code = "void nowhere(void);\nvoid call(void) { nowhere(); }\n"
    path = _plain_library(tmp_path, "needs", code)
    with pytest.raises(RegistrationError, match=r"needs the symbol 'nowhere'") as caught:
        load_library(path, dispatcher=Dispatcher())
    assert "extra_ldflags" in str(caught.value)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"is not a file"):
        load_library(tmp_path / "absent.so", dispatcher=Dispatcher())


def test_a_second_def_block_names_both_sources(kernels_so: Path) -> None:
    d = Dispatcher()
    python_def = d.register_library("cpptest", "DEF")
    with pytest.raises(RegistrationError) as caught:
        load_library(kernels_so, dispatcher=d)
    text = str(caught.value)
    assert "test_load.py" in text and "kernels.cpp:" in text
    assert d.snapshot().operators == ()  # nothing of the failed load stays
    python_def.remove()
    with load_library(kernels_so, dispatcher=d):
        assert d.find_op("cpptest::add") is not None


def test_a_kernel_whose_cpp_type_does_not_fit_the_schema(mismatch_so: Path) -> None:
    d = Dispatcher()
    with Library("cppimpl", "DEF", dispatcher=d) as lib:
        lib.define("scale(Tensor x, float k) -> Tensor")
        with pytest.raises(RegistrationError) as caught:
            load_library(mismatch_so, dispatcher=d)
    text = str(caught.value)
    assert "cppimpl::scale(Tensor x, float k) -> Tensor" in text
    assert "scale(Tensor _0, int _1) -> Tensor _0" in text
    assert "argument 1 (k) is float in the schema, int in C++" in text
    assert "mismatch.cpp:" in text and "test_load.py" in text


def test_an_impl_block_before_its_def_is_a_dangling_impl(mismatch_so: Path) -> None:
    d = Dispatcher()
    with load_library(mismatch_so, dispatcher=d):
        assert d.find_op("cppimpl::scale") is None
        assert [k.op for k in d.snapshot().dangling_impls] == ["cppimpl::scale"]
        with Library("cppimpl", "DEF", dispatcher=d) as lib:
            lib.define("scale(Tensor x, int k) -> Tensor")
            op = d.find_op("cppimpl::scale")
            assert op is not None
            np.testing.assert_allclose(op(np.arange(3.0), 2), [0.0, 2.0, 4.0])
    assert d.snapshot().operators == ()


def _registrations(d: Dispatcher) -> tuple[int, int, int]:
    snap = d.snapshot()
    return len(snap.operators), len(snap.libraries), len(snap.dangling_impls)


def test_load_and_remove_a_thousand_times(kernels_so: Path) -> None:
    d = Dispatcher()
    empty = _registrations(d)
    for _ in range(100):  # warm the caches (schemas, call code) before measuring
        load_library(kernels_so, dispatcher=d).remove()
    # Collected first: a ctypes library object sits in reference cycles, which the
    # cyclic collector frees on its own schedule (later on Python 3.13): not a leak.
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for _ in range(900):
        handle = load_library(kernels_so, dispatcher=d)
        handle.remove()
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    growth = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert _registrations(d) == empty
    assert growth < 256 * 1024, f"{growth} bytes more after 900 loads"


def test_threads_call_while_another_loads_and_removes(kernels_so: Path) -> None:
    d = Dispatcher()
    keep = load_library(kernels_so, dispatcher=d)
    op = d.find_op("cpptest::add")
    assert op is not None
    stop = threading.Event()
    wrong: list[Any] = []
    calls = [0] * 8

    def call(slot: int) -> None:
        x = np.full(64, float(slot))
        while not stop.is_set():
            result = op(x, x)
            if not np.array_equal(result, x * 2):
                wrong.append(result)
            calls[slot] += 1

    def churn() -> None:
        other = Dispatcher()
        for _ in range(50):
            load_library(kernels_so, dispatcher=other).remove()
        stop.set()

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    threads.append(threading.Thread(target=churn))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    keep.remove()
    assert wrong == []
    assert all(count > 0 for count in calls)


def test_calls_during_removal_fail_cleanly(kernels_so: Path) -> None:
    d = Dispatcher()
    handle = load_library(kernels_so, dispatcher=d)
    op = d.find_op("cpptest::add")
    assert op is not None
    handle.remove()
    with pytest.raises((UnknownOperatorError, MissingKernelError)):
        op(np.ones(2), np.ones(2))


def test_load_library_is_public_and_lazy() -> None:
    code = "import sys, customop; print('tvm_ffi' in sys.modules, 'customop.cpp' in sys.modules)"
    done = subprocess.run(
        ["python", "-c", code], capture_output=True, text=True, check=True, cwd=HERE.parent.parent
    )
    assert done.stdout.split() == ["False", "False"]
    assert customop.load_library is load_library

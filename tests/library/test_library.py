"""Library (DEF / IMPL / FRAGMENT), its lifetime, and the block decorators."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from customop.dispatch import Dispatcher, DispatchKey, DispatchKeySet
from customop.exceptions import RegistrationError
from customop.library import Library, Ops, library, library_fragment, library_impl


def _add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x + y


def test_define_and_impl_make_a_callable_op(dispatcher: Dispatcher, ops: Ops) -> None:
    lib = Library("mylib", "DEF", dispatcher=dispatcher)
    lib.define("add(Tensor x, Tensor y) -> Tensor")
    lib.impl("add", _add, "CPU")
    x = np.arange(3.0)
    np.testing.assert_array_equal(ops.mylib.add(x, x), 2 * x)
    assert str(ops.mylib.add.default.schema) == "mylib::add(Tensor x, Tensor y) -> Tensor"


def test_close_removes_everything_newest_first(dispatcher: Dispatcher) -> None:
    lib = Library("mylib", "DEF", dispatcher=dispatcher)
    lib.define("add(Tensor x, Tensor y) -> Tensor")
    lib.impl("add", _add, "CPU")
    lib.close()
    assert dispatcher.find_op("mylib::add") is None
    assert lib.closed
    lib.close()  # idempotent
    # The namespace is free again for a new DEF library.
    Library("mylib", "DEF", dispatcher=dispatcher).close()


def test_library_is_a_context_manager(dispatcher: Dispatcher) -> None:
    with Library("mylib", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x) -> Tensor")
        assert dispatcher.find_op("mylib::f") is not None
    assert dispatcher.find_op("mylib::f") is None


def test_garbage_collection_closes_the_library(dispatcher: Dispatcher) -> None:
    lib = Library("mylib", "DEF", dispatcher=dispatcher)
    lib.define("f(Tensor x) -> Tensor")
    del lib
    gc.collect()
    assert dispatcher.find_op("mylib::f") is None


def test_second_def_library_names_both(dispatcher: Dispatcher) -> None:
    first = Library("mylib", "DEF", dispatcher=dispatcher)
    with pytest.raises(RegistrationError, match="FRAGMENT"):
        Library("mylib", "DEF", dispatcher=dispatcher)
    first.close()


def test_fragment_adds_definitions(dispatcher: Dispatcher, ops: Ops) -> None:
    with (
        Library("mylib", "DEF", dispatcher=dispatcher) as lib,
        Library("mylib", "FRAGMENT", dispatcher=dispatcher) as fragment,
    ):
        lib.define("f(Tensor x) -> Tensor")
        fragment.define("g(Tensor x) -> Tensor")
        assert ops.mylib.names() == ["f", "g"]
        assert {"f", "g"} <= set(dir(ops.mylib))


def test_define_in_another_namespace_names_both(dispatcher: Dispatcher) -> None:
    with Library("mylib", "DEF", dispatcher=dispatcher) as lib:
        with pytest.raises(RegistrationError) as excinfo:
            lib.define("other::f(Tensor x) -> Tensor")
        assert str(excinfo.value) == (
            "Library.define: 'other::f' is in namespace 'other', but this library is for "
            "'mylib'. A library registers in its own namespace only. Use Library('other', ...) "
            "for it, or drop the prefix."
        )
        assert dispatcher.find_op("other::f") is None


def test_impl_library_cannot_define(dispatcher: Dispatcher) -> None:
    with (
        Library("mylib", "IMPL", "CPU", dispatcher=dispatcher) as lib,
        pytest.raises(RegistrationError, match="IMPL library"),
    ):
        lib.define("f(Tensor x) -> Tensor")


def test_impl_library_uses_its_key(dispatcher: Dispatcher, ops: Ops) -> None:
    with (
        Library("mylib", "DEF", dispatcher=dispatcher) as lib,
        Library("mylib", "IMPL", "CPU", dispatcher=dispatcher) as impl,
    ):
        lib.define("add(Tensor x, Tensor y) -> Tensor")
        impl.impl("add", _add)
        entry = dispatcher.table_entry("mylib::add", "CPU")
        assert entry.reason == "kernel"


def test_impl_without_def_is_a_dangling_impl(dispatcher: Dispatcher) -> None:
    with Library("mylib", "IMPL", "CPU", dispatcher=dispatcher) as impl:
        impl.impl("never_defined", _add)
        dangling = dispatcher.find_dangling_impls()
        assert [str(info.op) for info in dangling] == ["mylib::never_defined"]
    assert dispatcher.find_dangling_impls() == ()


def test_with_keyset_passes_the_keys(dispatcher: Dispatcher, ops: Ops) -> None:
    seen: list[DispatchKeySet] = []

    def noting_keys(keyset: DispatchKeySet, x: np.ndarray) -> np.ndarray:
        seen.append(keyset)
        return x

    with Library("mylib", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", noting_keys, "CPU", with_keyset=True)
        ops.mylib.f(np.zeros(1))
        # Dumps name the user's kernel, not the wrapper that drops the op argument.
        assert "CPU: noting_keys at test_library.py:" in dispatcher.dump("mylib::f")
    assert DispatchKey.CPU in seen[0]


def test_fallback_serves_every_op(dispatcher: Dispatcher, ops: Ops) -> None:
    calls: list[str] = []

    def log(op: object, keyset: DispatchKeySet, *args: object, **kwargs: object) -> object:
        calls.append(str(op.name))  # type: ignore[attr-defined]
        return op.redispatch(keyset.below(DispatchKey.CPU), *args, **kwargs)  # type: ignore[attr-defined]

    with Library("mylib", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", lambda x: x, "Meta")
        lib.fallback(log, "CPU")
        with pytest.raises(NotImplementedError):
            ops.mylib.f(np.zeros(1))
    assert calls == ["mylib::f"]


def test_fallback_needs_a_key(dispatcher: Dispatcher) -> None:
    with (
        Library("mylib", "FRAGMENT", dispatcher=dispatcher) as lib,
        pytest.raises(RegistrationError, match="no dispatch key"),
    ):
        lib.fallback(lambda *a: None)


def test_closed_library_refuses_registrations(dispatcher: Dispatcher) -> None:
    lib = Library("mylib", "FRAGMENT", dispatcher=dispatcher)
    lib.close()
    with pytest.raises(RegistrationError, match="is closed"):
        lib.define("f(Tensor x) -> Tensor")


def test_bad_kind_is_rejected(dispatcher: Dispatcher) -> None:
    with pytest.raises(RegistrationError, match="not a library kind"):
        Library("mylib", "DEFINE", dispatcher=dispatcher)  # type: ignore[arg-type]


def test_block_decorators_mirror_the_cpp_macros(dispatcher: Dispatcher, ops: Ops) -> None:
    @library("mylib", dispatcher=dispatcher)
    def defs(m: Library) -> None:
        m.define("add(Tensor x, Tensor y) -> Tensor")

    @library_impl("mylib", "CPU", dispatcher=dispatcher)
    def cpu(m: Library) -> None:
        m.impl("add", _add)

    @library_fragment("mylib", dispatcher=dispatcher)
    def more(m: Library) -> None:
        m.define("neg(Tensor x) -> Tensor")
        m.impl("neg", np.negative, "CPU")

    x = np.ones(2)
    np.testing.assert_array_equal(ops.mylib.add(x, x), [2.0, 2.0])
    np.testing.assert_array_equal(ops.mylib.neg(x), [-1.0, -1.0])
    assert isinstance(defs, Library) and isinstance(cpu, Library) and isinstance(more, Library)
    with pytest.raises(RegistrationError):

        @library("mylib", dispatcher=dispatcher)
        def again(m: Library) -> None: ...

    for lib in (more, cpu, defs):
        lib.close()


def test_failing_block_registers_nothing(dispatcher: Dispatcher) -> None:
    with pytest.raises(ZeroDivisionError):

        @library("mylib", dispatcher=dispatcher)
        def defs(m: Library) -> None:
            m.define("f(Tensor x) -> Tensor")
            raise ZeroDivisionError

    assert dispatcher.find_op("mylib::f") is None
    Library("mylib", "DEF", dispatcher=dispatcher).close()

"""torch.library's free functions: define, impl, impl_abstract, get_kernel, and handle_of."""

from __future__ import annotations

import gc
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from customop.dispatch import Dispatcher, DispatchKey, RegistrationHandle
from customop.exceptions import (
    DispatchKeyError,
    KernelOverrideWarning,
    MissingKernelError,
    RegistrationError,
    RegistrationValueError,
)
from customop.library import (
    Library,
    Ops,
    custom_op,
    define,
    get_kernel,
    handle_of,
    impl,
    impl_abstract,
    register_fake,
    register_kernel,
)


def test_define_lives_until_its_handle_is_removed(dispatcher: Dispatcher, ops: Ops) -> None:
    handle = define("free::neg", "(Tensor x) -> Tensor", dispatcher=dispatcher)
    impl("free::neg", "cpu", lambda x: -x, dispatcher=dispatcher)
    gc.collect()  # no Library object to collect: the definition stays
    np.testing.assert_array_equal(ops.free.neg(np.ones(1)), [-1.0])
    assert isinstance(handle, RegistrationHandle)
    handle.remove()
    assert dispatcher.find_op("free::neg") is None
    dangling = dispatcher.find_dangling_impls()  # the impl stays, as in torch
    assert [info.op for info in dangling] == ["free::neg"]


def test_define_with_lib_goes_with_the_library(dispatcher: Dispatcher) -> None:
    with Library("free", "FRAGMENT", dispatcher=dispatcher) as lib:
        define("free::f", "(Tensor x) -> Tensor", lib=lib, tags="pointwise")
        assert dispatcher.find_op("free::f").tags == ("pointwise",)
    assert dispatcher.find_op("free::f") is None


@pytest.mark.parametrize(
    ("qualname", "schema", "message"),
    [
        (
            "neg",
            "(Tensor x) -> Tensor",
            "define: 'neg' has no namespace. Operators live in namespaces, so libraries stay "
            "apart. Write it as 'namespace::name', e.g. 'mylib::op'.",
        ),
        (
            "free::neg",
            "other(Tensor x) -> Tensor",
            "define: the schema names 'other', but the op is 'free::neg'. The op's name comes "
            "from the first argument (torch: expected schema to look like '(Tensor x) -> "
            "Tensor'). Write the schema without a name, as in '(Tensor x) -> Tensor'.",
        ),
    ],
    ids=["no-namespace", "other-name"],
)
def test_define_refuses_bad_names(
    dispatcher: Dispatcher, qualname: str, schema: str, message: str
) -> None:
    with pytest.raises(RegistrationError) as excinfo:
        define(qualname, schema, dispatcher=dispatcher)
    assert str(excinfo.value) == message
    assert dispatcher.find_op("free::neg") is None


def test_impl_takes_device_types_and_key_names(dispatcher: Dispatcher, ops: Ops) -> None:
    define("free::twice", "(Tensor x) -> Tensor", dispatcher=dispatcher)

    @impl("free::twice", ["cpu", "Meta"], dispatcher=dispatcher)
    def twice(x: np.ndarray) -> np.ndarray:
        return 2 * x

    np.testing.assert_array_equal(twice(np.ones(1)), [2.0])  # still the function
    np.testing.assert_array_equal(ops.free.twice(np.ones(1)), [2.0])
    assert dispatcher.table_entry("free::twice", "Meta").reason == "kernel"
    handle_of(twice).remove()
    assert dispatcher.table_entry("free::twice", "CPU").reason == "missing"
    assert dispatcher.table_entry("free::twice", "Meta").reason == "missing"


def test_impl_default_and_composite_keys(dispatcher: Dispatcher) -> None:
    define("free::id", "(Tensor x) -> Tensor", dispatcher=dispatcher)
    impl("free::id", "default", lambda x: x, dispatcher=dispatcher)
    assert dispatcher.table_entry("free::id", "CPU").reason == "default backend kernel"
    impl("free::id", "CompositeImplicitAutograd", lambda x: x, dispatcher=dispatcher)
    assert dispatcher.dump("free::id").count("[alias]") == 2


def test_impl_checks_the_kernel_of_a_defined_op(dispatcher: Dispatcher) -> None:
    define("free::add", "(Tensor x, Tensor y) -> Tensor", dispatcher=dispatcher)
    with pytest.raises(RegistrationError, match=r"^impl: the kernel <lambda>\(x, z\) does not"):
        impl("free::add", "cpu", lambda x, z: x, dispatcher=dispatcher)
    assert dispatcher.table_entry("free::add", "CPU").reason == "missing"


def test_impl_with_an_unknown_type_names_the_known_keys(dispatcher: Dispatcher) -> None:
    # A ValueError as customop's key errors are, and a RuntimeError as torch's impl raises.
    with pytest.raises(RegistrationValueError, match=r"^impl: dispatch key 'tpu' is unknown\."):
        impl("free::add", "tpu", lambda x: x, dispatcher=dispatcher)


def test_the_older_impl_spelling_takes_a_library(dispatcher: Dispatcher, ops: Ops) -> None:
    with Library("older", "DEF", dispatcher=dispatcher) as lib:
        lib.define("neg(Tensor x) -> Tensor")

        @impl(lib, "neg", "CPU")
        def neg(x: np.ndarray) -> np.ndarray:
            return -x

        np.testing.assert_array_equal(ops.older.neg(np.ones(1)), [-1.0])
        assert handle_of(neg).description == "impl older::neg CPU"
    assert dispatcher.find_op("older::neg") is None


def test_impl_abstract_warns_and_registers_a_fake(dispatcher: Dispatcher) -> None:
    define("free::sq", "(Tensor x) -> Tensor", dispatcher=dispatcher)
    with Library("free", "FRAGMENT", dispatcher=dispatcher) as lib:
        with pytest.warns(DeprecationWarning) as caught:

            @impl_abstract("free::sq", lib=lib)
            def sq_fake(x: Any) -> Any:
                return x

        assert str(caught[0].message) == (
            "impl_abstract is deprecated: it was renamed register_fake. Both register a fake "
            "impl. Call customop.register_fake instead."
        )
        assert caught[0].filename == __file__
        assert dispatcher.table_entry("free::sq", "Fake").kernel == "sq_fake"
    assert dispatcher.table_entry("free::sq", "Fake").reason != "kernel"


def test_get_kernel_runs_the_table_entry(dispatcher: Dispatcher) -> None:
    define("free::inc", "(Tensor x) -> Tensor", dispatcher=dispatcher)
    impl("free::inc", "default", lambda x: x + 1, dispatcher=dispatcher)
    kernel = get_kernel("free::inc", "CPU", dispatcher=dispatcher)
    np.testing.assert_array_equal(kernel(np.zeros(1)), [1.0])
    assert kernel.__name__ == "<lambda>"
    assert "default backend kernel" in (kernel.__doc__ or "")


def test_get_kernel_refuses_missing_and_alias_keys(dispatcher: Dispatcher) -> None:
    define("free::inc", "(Tensor x) -> Tensor", dispatcher=dispatcher)
    with pytest.raises(MissingKernelError) as excinfo:
        get_kernel("free::inc", DispatchKey.CUDA, dispatcher=dispatcher)
    assert str(excinfo.value) == (
        "get_kernel: 'free::inc' has no kernel for dispatch key 'CUDA' (the table says "
        "'missing'; torch: no kernel for CUDA for free::inc). Only a key with a kernel can give "
        "one. Register one, or pick a key from dispatcher.dump_table('free::inc')."
    )
    with pytest.raises(DispatchKeyError, match=r"^get_kernel: 'Autograd' is an alias key\."):
        get_kernel("free::inc", "Autograd", dispatcher=dispatcher)


def test_get_kernel_gives_the_kernel_as_it_was(dispatcher: Dispatcher) -> None:
    # torch's get_kernel: a kernel registered later may call the one it overrides.
    lib = Library("free", "FRAGMENT", dispatcher=dispatcher)
    lib.define("inc(Tensor x) -> Tensor")
    lib.impl("inc", lambda x: x + 1, "CPU")
    old = get_kernel("free::inc", "CPU", dispatcher=dispatcher)
    with pytest.warns(KernelOverrideWarning):
        newer = lib.impl("inc", lambda x: old(x) * 10, "CPU")
    np.testing.assert_array_equal(dispatcher.find_op("free::inc")(np.zeros(1)), [10.0])
    current = get_kernel("free::inc", "CPU", dispatcher=dispatcher)
    newer.remove()
    with pytest.raises(RegistrationError, match="has been invalidated"):
        current(np.zeros(1))
    np.testing.assert_array_equal(old(np.zeros(1)), [1.0])
    lib.close()


def test_impl_takes_op_objects(dispatcher: Dispatcher) -> None:
    lib = Library("free", "FRAGMENT", dispatcher=dispatcher)
    lib.define("inc(Tensor x) -> Tensor")
    op = Ops(dispatcher).free.inc
    for target, value in ((op.default, 1.0), (op, 2.0)):
        handle = lib.impl(target, lambda x, value=value: x + value, "CPU")
        np.testing.assert_array_equal(op(np.zeros(1)), [value])
        handle.remove()
    with pytest.raises(TypeError, match=r"^Library.impl: expected the op's name or op object"):
        lib.impl(3, lambda x: x, "CPU")
    lib.close()


def test_handle_of_an_unregistered_function_says_so() -> None:
    def never(x: Any) -> Any:
        return x

    with pytest.raises(RegistrationError) as excinfo:
        handle_of(never)
    assert str(excinfo.value).startswith(
        "handle_of: 'test_handle_of_an_unregistered_function_says_so.<locals>.never' has no "
        "registration. Only functions passed to register_fake, register_kernel or impl have one"
    )


def test_handle_of_a_function_that_cannot_be_weakly_referenced(dispatcher: Dispatcher) -> None:
    define("free::absolute", "(Tensor x) -> Tensor", dispatcher=dispatcher)
    assert impl("free::absolute", "cpu", np.abs, dispatcher=dispatcher) is np.abs
    assert handle_of(np.abs).description == "impl free::absolute CPU"
    handle_of(np.abs).remove()


def test_free_decorators_return_the_function(dispatcher: Dispatcher, ops: Ops) -> None:
    define("free::cube", "(Tensor x) -> Tensor", dispatcher=dispatcher)

    @register_kernel("free::cube", "cpu", dispatcher=dispatcher)
    def _(x: np.ndarray) -> np.ndarray:
        return x**3

    @register_fake("free::cube", dispatcher=dispatcher)
    def cube_fake(x: Any) -> Any:
        return x

    np.testing.assert_array_equal(_(np.full(1, 2.0)), [8.0])
    assert cube_fake(5) == 5
    assert handle_of(cube_fake).description == "impl free::cube Fake"
    assert handle_of(_).source.startswith("test_free.py:")


def test_allow_override_false_refuses_a_second_fake(dispatcher: Dispatcher) -> None:
    define("free::cube", "(Tensor x) -> Tensor", dispatcher=dispatcher)
    register_fake("free::cube", lambda x: x, dispatcher=dispatcher)
    with pytest.raises(
        RegistrationError,
        match=r"already has a fake impl \(<lambda> at test_free.py:\d+\), and allow_override",
    ):
        register_fake("free::cube", lambda x: x, dispatcher=dispatcher, allow_override=False)


def test_a_library_owns_free_registrations_given_lib(dispatcher: Dispatcher) -> None:
    define("free::cube", "(Tensor x) -> Tensor", dispatcher=dispatcher)
    with Library("free", "IMPL", dispatcher=dispatcher) as lib:
        register_kernel("free::cube", "cpu", lambda x: x**3, lib=lib)
        register_fake("free::cube", lambda x: x, lib=lib)
        assert dispatcher.table_entry("free::cube", "CPU").reason == "kernel"
        assert dispatcher.table_entry("free::cube", "Fake").reason == "kernel"
    assert dispatcher.table_entry("free::cube", "CPU").reason == "missing"
    assert dispatcher.table_entry("free::cube", "Fake").reason != "kernel"


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["decorator", "call", "remove"]), st.integers(0, 3))))
def test_handles_of_returned_functions_undo_in_any_order(steps: list[tuple[str, int]]) -> None:
    """Kernels registered either way, removed via handle_of in any order: the stack holds."""
    d = Dispatcher()
    define("seq::f", "(Tensor x) -> Tensor", dispatcher=d)
    live: list[Any] = []
    for count, (action, index) in enumerate(steps):
        if action == "remove" and live:
            handle_of(live.pop(index % len(live))).remove()
        elif action != "remove":
            kernel = _constant(count)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", KernelOverrideWarning)
                if action == "decorator":
                    returned = register_kernel("seq::f", "cpu", dispatcher=d)(kernel)
                else:
                    returned = register_kernel("seq::f", "cpu", kernel, dispatcher=d)
            assert returned is kernel
            live.append(kernel)
        if live:
            assert d.find_op("seq::f")(np.zeros(1)) == live[-1](None)
        else:
            assert d.table_entry("seq::f", "CPU").reason == "missing"


def _constant(value: int) -> Any:
    def kernel(x: Any) -> int:
        return value

    return kernel


def test_a_name_of_a_custom_op_registers_with_the_definition(dispatcher: Dispatcher) -> None:
    @custom_op("free::op", mutates_args=(), dispatcher=dispatcher)
    def op(x: np.ndarray) -> np.ndarray:
        return x

    register_fake("free::op", lambda x: x, dispatcher=dispatcher)
    assert dispatcher.table_entry("free::op", "Fake").reason == "kernel"

    @custom_op("free::op", mutates_args=(), dispatcher=dispatcher)
    def op(x: np.ndarray, n: int) -> np.ndarray:  # noqa: F811 -- a redefinition, on purpose
        return x

    # The old definition's fake went with it: it no longer fits the new schema.
    assert dispatcher.table_entry("free::op", "Fake").reason != "kernel"


def test_a_keyed_library_refuses_another_key(dispatcher: Dispatcher) -> None:
    # torch: "inconsistent with the dispatch key of the enclosing TORCH_LIBRARY_IMPL block".
    Library("free", "DEF", dispatcher=dispatcher).define("inc(Tensor x) -> Tensor")
    with Library("free", "IMPL", "CPU", dispatcher=dispatcher) as lib:
        lib.impl("inc", lambda x: x + 1)  # the library's own key
        with pytest.warns(KernelOverrideWarning):
            lib.impl("inc", lambda x: x + 2, "CPU")  # named, the same key
        with pytest.raises(RegistrationError, match="inconsistent with the dispatch key"):
            lib.impl("inc", lambda x: x + 1, "CUDA")

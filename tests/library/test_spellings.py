"""torch.library spellings the front-ends accept: keys, fallbacks, tags, mutates_args, schemas."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from customop import DispatchKeySet, FunctionSchema, Tensor, fallthrough, infer_schema
from customop.dispatch import Dispatcher
from customop.exceptions import DispatchKeyError, RegistrationError
from customop.library import Library, Ops, custom_op, handle_of


def test_an_empty_dispatch_key_means_the_librarys_own(dispatcher: Dispatcher, ops: Ops) -> None:
    with Library("sp", "DEF", dispatcher=dispatcher) as lib:
        lib.define("neg(Tensor x) -> Tensor")
        lib.impl("neg", lambda x: -x, "")
        assert dispatcher.table_entry("sp::neg", "CPU").reason == "math kernel"
    with Library("sp", "IMPL", "", dispatcher=dispatcher) as lib:
        assert lib.dispatch_key is None


def test_a_device_type_for_a_key_suggests_the_key(dispatcher: Dispatcher) -> None:
    with Library("sp", "DEF", dispatcher=dispatcher) as lib:
        lib.define("neg(Tensor x) -> Tensor")
        with pytest.raises(DispatchKeyError) as excinfo:
            lib.impl("neg", lambda x: -x, "cpu")
    assert str(excinfo.value).startswith(
        "Library.impl('sp::neg'): dispatch key 'cpu' is unknown. Kernels, fallbacks and key "
        "sets are keyed by dispatch key, so the name must be one the dispatcher knows. "
        "Did you mean 'CPU'? "
    )


def test_library_impl_checks_that_the_kernel_takes_the_arguments(dispatcher: Dispatcher) -> None:
    with Library("sp", "DEF", dispatcher=dispatcher) as lib:
        lib.define("add(Tensor x, Tensor y) -> Tensor")
        lib.impl("add", np.add, "CPU")  # a ufunc: no Python signature to compare
        lib.impl("add", lambda a, b: a + b, "Meta")  # other names: fine, as in torch
        with pytest.raises(RegistrationError) as excinfo:
            lib.impl("add", lambda x: x, "CUDA")
        assert dispatcher.table_entry("sp::add", "CUDA").reason == "missing"
    assert str(excinfo.value) == (
        "Library.impl: the kernel <lambda>(x) does not match the schema sp::add(Tensor x, "
        "Tensor y) -> Tensor: it takes 1 positional argument(s), the schema passes 2. The "
        "dispatcher calls it with the op's arguments, positional ones by position and "
        "keyword-only ones by name. Give it the schema's parameters, positional ones first."
    )


def test_library_impl_refuses_extra_required_parameters(dispatcher: Dispatcher) -> None:
    with Library("sp", "DEF", dispatcher=dispatcher) as lib:
        lib.define("neg(Tensor x) -> Tensor")
        lib.impl("neg", fallthrough, "CPU")  # the fallthrough marker is never checked
        with pytest.raises(RegistrationError, match=r"it has extra required parameter 'y'\."):
            lib.impl("neg", lambda x, y: x, "CUDA")


def test_library_register_fake_and_torchs_private_spelling(dispatcher: Dispatcher) -> None:
    with Library("sp", "DEF", dispatcher=dispatcher) as lib:
        lib.define("neg(Tensor x) -> Tensor")
        handle = lib._register_fake("neg", lambda x: x)
        assert dispatcher.table_entry("sp::neg", "Fake").reason == "kernel"
        handle.remove()
        with pytest.raises(RegistrationError, match=r"^Library\.register_fake: the fake impl"):
            lib.register_fake("neg", lambda y: y)
        lib.register_fake("sp::neg", lambda x: x)
    assert dispatcher.find_op("sp::neg") is None


@pytest.mark.parametrize(
    ("with_keyset", "expected"),
    [
        (None, ("op", "keyset", 1.0)),
        (False, ("op", 1.0)),
        (True, ("keyset", "op", 1.0)),
    ],
    ids=["customop", "torch-default", "torch-with-keyset"],
)
def test_fallback_with_keyset_calls_as_torch_does(
    dispatcher: Dispatcher, with_keyset: bool | None, expected: tuple[Any, ...]
) -> None:
    seen: list[tuple[Any, ...]] = []

    def kind(value: Any) -> Any:
        if isinstance(value, DispatchKeySet):
            return "keyset"
        return "op" if hasattr(value, "schema") else float(value[0])

    def fallback(*args: Any, **kwargs: Any) -> Any:
        seen.append(tuple(kind(a) for a in args))
        return args[-1]

    with Library("sp", "DEF", dispatcher=dispatcher) as lib:
        lib.define("neg(Tensor x) -> Tensor")
        lib.fallback(fallback, "CPU", with_keyset=with_keyset)
        dispatcher.find_op("sp::neg")(np.ones(1))
    assert seen == [expected]


def test_fallback_with_an_empty_key_and_no_library_key_is_refused(dispatcher: Dispatcher) -> None:
    lib = Library("sp", "DEF", dispatcher=dispatcher)
    with pytest.raises(RegistrationError, match=r"^Library\.fallback: no dispatch key"):
        lib.fallback(lambda op, keyset, *a: None, "")
    lib.close()


@pytest.mark.parametrize(
    "mutates_args", [{}, set(), [], (), frozenset()], ids=["dict", "set", "list", "tuple", "fs"]
)
def test_empty_collections_mean_no_mutation(dispatcher: Dispatcher, mutates_args: Any) -> None:
    @custom_op("sp::f", mutates_args=mutates_args, dispatcher=dispatcher)
    def f(x: np.ndarray) -> np.ndarray:
        return x + 1

    assert str(f.schema) == "sp::f(Tensor x) -> Tensor"
    assert str(infer_schema(f._fn, mutates_args=mutates_args)) == "(Tensor x) -> Tensor"


def test_a_set_of_mutated_names_is_accepted(dispatcher: Dispatcher) -> None:
    @custom_op("sp::fill_", mutates_args={"x"}, dispatcher=dispatcher)
    def fill_(x: np.ndarray, value: float) -> None:
        x[...] = value

    assert str(fill_.schema) == "sp::fill_(Tensor(a0!) x, float value) -> ()"


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ("pointwise", ("pointwise",)),
        (["pointwise", "core"], ("pointwise", "core")),
        (None, ()),
    ],
    ids=["bare-str", "list", "none"],
)
def test_tags_spellings(dispatcher: Dispatcher, tags: Any, expected: tuple[str, ...]) -> None:
    @custom_op("sp::g", mutates_args=(), tags=tags, dispatcher=dispatcher)
    def g(x: np.ndarray) -> np.ndarray:
        return x + 1

    with Library("sp", "FRAGMENT", dispatcher=dispatcher) as lib:
        lib.define("h(Tensor x) -> Tensor", tags=tags)
        assert dispatcher.find_op("sp::h").tags == expected
    # @custom_op adds pt2_compliant_tag first, as torch's custom_op does.
    assert dispatcher.find_op("sp::g").tags == ("pt2_compliant_tag", *expected)


def test_a_tag_that_is_not_a_name_is_refused(dispatcher: Dispatcher) -> None:
    with Library("sp", "FRAGMENT", dispatcher=dispatcher) as lib:
        with pytest.raises(TypeError, match=r"^register_def: tag 3 is not in a sequence of str"):
            lib.define("h(Tensor x) -> Tensor", tags=[3])
        assert dispatcher.find_op("sp::h") is None


def test_a_name_plus_an_inferred_schema_is_torchs_text(dispatcher: Dispatcher, ops: Ops) -> None:
    def scale(x: Tensor, factor: float = 2.0, eps: float = 1e-5) -> Tensor:
        return x * factor

    schema = infer_schema(scale, mutates_args=())
    assert isinstance(schema, FunctionSchema)
    text = "scale" + schema
    assert text == "scale(Tensor x, float factor=2.0, float eps=1e-05) -> Tensor"
    with Library("sp", "FRAGMENT", dispatcher=dispatcher) as lib:
        lib.define(text)
        lib.impl("scale", scale, "CPU")
        np.testing.assert_array_equal(ops.sp.scale(np.ones(1)), [2.0])
    with pytest.raises(TypeError):
        _ = 1 + schema  # type: ignore[operator]


def test_device_types_default_means_every_device(dispatcher: Dispatcher) -> None:
    @custom_op("sp::k", mutates_args=(), device_types="cuda", dispatcher=dispatcher)
    def k(x: np.ndarray) -> np.ndarray:
        return x

    everywhere = k.register_kernel("default", lambda x: x + 1)
    assert dispatcher.table_entry("sp::k", "CPU").reason == "default backend kernel"
    np.testing.assert_array_equal(k(np.zeros(1)), [1.0])
    handle_of(everywhere).remove()
    assert dispatcher.table_entry("sp::k", "CPU").reason == "missing"


def test_allow_override_false_refuses_a_second_kernel(dispatcher: Dispatcher) -> None:
    with Library("sp", "DEF", dispatcher=dispatcher) as lib:
        lib.define("neg(Tensor x) -> Tensor")
        first = lib.impl("neg", lambda x: -x, "CPU", allow_override=False)
        with pytest.raises(RegistrationError) as excinfo:
            lib.impl("neg", lambda x: x, "CPU", allow_override=False)
        lib.register_fake("neg", lambda x: x)
        with pytest.raises(RegistrationError, match=r"already has a kernel for 'Fake'"):
            lib._register_fake("neg", lambda x: x, allow_override=False)
        assert dispatcher.table_entry("sp::neg", "CPU").kernel == "<lambda>"
    assert str(excinfo.value) == (
        "Library.impl: 'sp::neg' already has a kernel for 'CPU' (torch: there is already a "
        f"kernel registered, from {first.source}), and allow_override=False. Registering "
        "another would override it. Remove the first kernel's handle, or leave "
        "allow_override at True to stack the new one over it."
    )


@pytest.mark.parametrize("alias_analysis", ["", "FROM_SCHEMA"], ids=["default", "from-schema"])
def test_alias_analysis_from_the_schema_is_accepted(
    dispatcher: Dispatcher, alias_analysis: str
) -> None:
    with Library("sp", "DEF", dispatcher=dispatcher) as lib:
        lib.define("neg(Tensor x) -> Tensor", alias_analysis)
        assert dispatcher.find_op("sp::neg") is not None


def test_other_alias_analysis_is_refused(dispatcher: Dispatcher) -> None:
    with Library("sp", "DEF", dispatcher=dispatcher) as lib:
        with pytest.raises(RegistrationError) as excinfo:
            lib.define("neg(Tensor x) -> Tensor", "CONSERVATIVE")
        assert dispatcher.find_op("sp::neg") is None
    assert str(excinfo.value) == (
        "Library.define: alias_analysis='CONSERVATIVE' is not supported. customop reads aliasing "
        "from the schema's annotations only (torch's FROM_SCHEMA). Annotate the schema, e.g. "
        "'Tensor(a!) x', and drop alias_analysis."
    )

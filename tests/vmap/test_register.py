"""register_vmap: torch's signature, checks before anything is registered, handles, dumps."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import customop
from customop import Library, RegistrationError, custom_op, handle_of, register_vmap
from customop.dispatch import Dispatcher
from customop.vmap import VMAP_RULE, VmapInfo, VmapRule, rule_of


def _scale(dispatcher: Dispatcher) -> Any:
    @custom_op("vr::scale", mutates_args=(), dispatcher=dispatcher)
    def scale(x: np.ndarray, factor: float) -> np.ndarray:
        return x * factor

    return scale


def _rule(info: VmapInfo, in_dims: tuple[Any, ...], x: Any, factor: float) -> Any:
    return x * factor, in_dims[0]


def test_method_as_decorator_returns_the_function_and_stores_the_rule(
    dispatcher: Dispatcher,
) -> None:
    scale = _scale(dispatcher)

    @scale.register_vmap
    def rule(info: VmapInfo, in_dims: tuple[Any, ...], x: Any, factor: float) -> Any:
        return x * factor, in_dims[0]

    found = rule_of(scale)
    assert isinstance(found, VmapRule)
    assert found.fn is rule
    assert found.name == "vr::scale"
    assert found.source.startswith("test_register.py:")
    assert handle_of(rule).source == found.source
    assert rule_of("vr::scale", dispatcher=dispatcher) is found
    assert scale.op.handle.extra(VMAP_RULE) is found
    handle_of(rule).remove()
    assert rule_of(scale) is None


def test_method_as_a_call_and_the_free_function(dispatcher: Dispatcher) -> None:
    scale = _scale(dispatcher)
    assert scale.register_vmap(_rule) is _rule
    handle_of(_rule).remove()
    assert register_vmap("vr::scale", _rule, dispatcher=dispatcher) is _rule
    rule = rule_of(scale)
    assert rule is not None and rule.fn is _rule
    handle_of(_rule).remove()
    decorator = register_vmap(scale.op)
    assert decorator(_rule) is _rule
    assert rule_of(scale.op.handle) is not None


def test_free_function_on_a_library_op(dispatcher: Dispatcher) -> None:
    lib = Library("vrlib", "DEF", dispatcher=dispatcher)
    lib.define("double(Tensor x) -> Tensor")

    def double_rule(info: VmapInfo, in_dims: tuple[Any, ...], x: Any) -> Any:
        return x * 2, in_dims[0]

    register_vmap("vrlib::double", double_rule, dispatcher=dispatcher)
    rule = rule_of("vrlib::double", dispatcher=dispatcher)
    assert rule is not None and rule.fn is double_rule
    lib.close()


def test_the_rule_shows_in_dump_with_its_source(dispatcher: Dispatcher) -> None:
    scale = _scale(dispatcher)
    scale.register_vmap(_rule)
    lines = dispatcher.dump(scale.op.handle).splitlines()
    source = handle_of(_rule).source
    assert f"extra vmap rule: _rule at {source}" in lines


def test_rule_of_a_name_no_op_has_is_none(dispatcher: Dispatcher) -> None:
    assert rule_of("vr::nothing", dispatcher=dispatcher) is None


def test_redefining_the_op_removes_its_rule(dispatcher: Dispatcher) -> None:
    scale = _scale(dispatcher)
    scale.register_vmap(_rule)
    again = _scale(dispatcher)
    assert rule_of(again) is None
    assert not handle_of(_rule).active


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        pytest.param(
            lambda info, in_dims, x: None,
            "it has no parameter for the op's argument 'factor'",
            id="too-few",
        ),
        pytest.param(
            lambda x, factor: None,
            "its first two parameters must be (info, in_dims), then the op's arguments",
            id="no-info",
        ),
        pytest.param(
            lambda info, in_dims, x, factor, extra: None,
            "its parameter 'extra' is not an argument of the op",
            id="extra-required",
        ),
    ],
)
def test_a_rule_that_cannot_take_the_arguments_is_refused_naming_the_parameter(
    dispatcher: Dispatcher, rule: Any, problem: str
) -> None:
    scale = _scale(dispatcher)
    with pytest.raises(RegistrationError) as raised:
        scale.register_vmap(rule)
    message = str(raised.value)
    assert message.startswith("vr::scale.register_vmap: the rule <lambda>(")
    assert f"does not fit vr::scale: {problem}." in message
    assert message.endswith("Give it the parameters (info, in_dims, x, factor).")
    assert rule_of(scale) is None


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param(lambda info, in_dims, *args, **kwargs: None, id="varargs"),
        pytest.param(lambda info, in_dims, x, factor=1.0, more=None: None, id="defaults"),
        pytest.param(lambda info, in_dims, a, b: None, id="other-names"),
    ],
)
def test_rules_that_can_take_the_arguments_are_accepted(dispatcher: Dispatcher, rule: Any) -> None:
    scale = _scale(dispatcher)
    scale.register_vmap(rule)
    found = rule_of(scale)
    assert found is not None and found.fn is rule


def test_keyword_only_arguments_are_passed_by_name(dispatcher: Dispatcher) -> None:
    @custom_op("vr::kw", mutates_args=(), dispatcher=dispatcher)
    def kw(x: np.ndarray, *, eps: float = 1e-5) -> np.ndarray:
        return x + eps

    with pytest.raises(RegistrationError, match="keyword-only argument 'eps'"):
        kw.register_vmap(lambda info, in_dims, x: None)
    kw.register_vmap(lambda info, in_dims, x, *, eps: None)
    assert rule_of(kw) is not None


def test_a_keyword_only_tensor_is_refused(dispatcher: Dispatcher) -> None:
    @custom_op("vr::kwt", mutates_args=(), dispatcher=dispatcher)
    def kwt(x: np.ndarray, *, w: np.ndarray) -> np.ndarray:
        return x * w

    with pytest.raises(RegistrationError) as raised:
        kwt.register_vmap(lambda info, in_dims, x, *, w: None)
    assert str(raised.value) == (
        "vr::kwt.register_vmap: vr::kwt has the keyword-only tensor argument 'w'. in_dims has "
        "one entry per positional argument, so a rule could not learn where its batch "
        "dimension is (torch refuses this too). Make 'w' a positional argument in the schema."
    )


def test_a_second_rule_is_refused_naming_both_places(dispatcher: Dispatcher) -> None:
    scale = _scale(dispatcher)
    scale.register_vmap(_rule)
    first = handle_of(_rule).source

    def other(info: VmapInfo, in_dims: tuple[Any, ...], x: Any, factor: float) -> Any:
        return x, 0

    with pytest.raises(RegistrationError) as raised:
        scale.register_vmap(other)
    message = str(raised.value)
    assert f"vr::scale already has the vmap rule _rule, from {first}; again at " in message
    assert message.endswith(
        "Remove the first rule's handle first (customop.handle_of(rule).remove())."
    )
    rule = rule_of(scale)
    assert rule is not None and rule.fn is _rule


def test_a_rule_that_is_not_callable_is_a_type_error(dispatcher: Dispatcher) -> None:
    scale = _scale(dispatcher)
    with pytest.raises(TypeError, match=r"the rule must be a function fn\(info, in_dims"):
        scale.register_vmap(42)  # type: ignore[type-var]


def test_vmap_info_is_torchs_named_pair() -> None:
    info = VmapInfo(8, "same")
    assert info.batch_size == 8
    assert info.randomness == "same"
    assert info == VmapInfo(batch_size=8, randomness="same")


def test_the_names_are_exported_where_torch_users_look() -> None:
    from customop.library import register_vmap as from_library

    assert customop.register_vmap is register_vmap
    assert from_library is register_vmap

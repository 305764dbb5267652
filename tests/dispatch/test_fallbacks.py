"""Fallbacks: one per key, shared by existing and future operators, alias keys expand."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from customop.dispatch import Dispatcher, DispatchKey, DispatchKeySet, OperatorHandle, fallthrough
from customop.exceptions import RegistrationError


def _boxed(name: str) -> Any:
    def fallback(op: OperatorHandle, keyset: DispatchKeySet, *args: Any, **kwargs: Any) -> Any:
        return (name, str(op.name), keyset.highest().name)

    fallback.__name__ = name
    return fallback


def test_fallback_serves_existing_and_future_operators(dispatcher: Dispatcher) -> None:
    dispatcher.register_def("t::early(Tensor x) -> Tensor")
    handle = dispatcher.register_fallback("CPU", _boxed("fb"))
    dispatcher.register_def("t::late(Tensor x) -> Tensor")
    for name in ("t::early", "t::late"):
        assert dispatcher.find_schema_or_throw(name)(np.ones(1)) == ("fb", name, "CPU")
    handle.remove()
    for name in ("t::early", "t::late"):
        assert dispatcher.table_entry(name, "CPU").reason == "missing"


def test_operator_kernel_beats_fallback(dispatcher: Dispatcher) -> None:
    dispatcher.register_def("t::op(Tensor x) -> Tensor")
    dispatcher.register_fallback("CPU", _boxed("fb"))
    with dispatcher.register_impl("t::op", "CPU", lambda x: "kernel"):
        assert dispatcher.find_schema_or_throw("t::op")(np.ones(1)) == "kernel"
    assert dispatcher.find_schema_or_throw("t::op")(np.ones(1))[0] == "fb"


def test_second_fallback_is_refused_naming_both(dispatcher: Dispatcher) -> None:
    first = dispatcher.register_fallback("CPU", _boxed("one"))
    before = dispatcher.snapshot()
    with pytest.raises(RegistrationError) as caught:
        dispatcher.register_fallback(DispatchKey.CPU, _boxed("two"))
    second = f"test_fallbacks.py:{int(first.source.split(':')[1]) + 3}"
    assert str(caught.value) == (
        f"register_fallback: dispatch key 'CPU' already has a fallback, at {first.source}; a "
        f"second fallback is at {second}. A key has at most one fallback, because it serves "
        "every operator without a kernel for that key. Remove the first fallback's handle "
        "before registering another."
    )
    assert dispatcher.snapshot() == before


def test_replacing_the_default_autograd_fallthrough_says_how(dispatcher: Dispatcher) -> None:
    with pytest.raises(RegistrationError) as caught:
        dispatcher.register_fallback("AutogradCPU", _boxed("autograd"))
    assert str(caught.value).endswith(
        "Remove the first fallback's handle before registering another (it is the "
        "dispatcher's default: remove it via Dispatcher.default_registrations, or create the "
        "dispatcher with Dispatcher(autograd_fallthrough=False))."
    )


def test_alias_fallback_registers_every_runtime_key_at_once(dispatcher: Dispatcher) -> None:
    array_default, autograd_default = dispatcher.default_registrations
    assert array_default.description == "array type numpy.ndarray"
    assert autograd_default.description == "fallback Autograd"
    autograd_default.remove()
    assert dispatcher.snapshot().fallbacks == ()
    handle = dispatcher.register_fallback("Autograd", _boxed("ad"))
    keys = [info.key for info in dispatcher.snapshot().fallbacks]
    assert keys == [key.name for key in DispatchKey.Autograd.expansion]
    handle.remove()
    assert dispatcher.snapshot().fallbacks == ()


def test_alias_fallback_conflict_changes_nothing(dispatcher: Dispatcher) -> None:
    # AutogradCPU..AutogradOther already fall through; none of them may be half-replaced.
    before = dispatcher.snapshot()
    with pytest.raises(RegistrationError):
        dispatcher.register_fallback("Autograd", _boxed("ad"))
    assert dispatcher.snapshot() == before


def test_fallthrough_fallback_skips_to_the_next_key(dispatcher: Dispatcher) -> None:
    dispatcher.register_def("t::op(Tensor x) -> Tensor")
    dispatcher.register_impl("t::op", "CPU", lambda x: "cpu")
    dispatcher.register_fallback("Tracer", fallthrough)
    op = dispatcher.find_schema_or_throw("t::op")
    from customop.dispatch import include_keys

    with include_keys(DispatchKey.Tracer):
        assert op(np.ones(1)) == "cpu"
    assert dispatcher.table_entry("t::op", "Tracer").reason == "fallthrough"

"""find_op, find_schema_or_throw, registrations_for_dispatch_key, dump, dump_table, snapshot."""

from __future__ import annotations

from typing import Any

import pytest

from customop.dispatch import Dispatcher, DispatcherSnapshot
from customop.exceptions import DispatchKeyError, KernelOverrideWarning, UnknownOperatorError


def add_cpu(x: Any, y: Any) -> Any:
    return x + y


def add_cpu_v2(x: Any, y: Any) -> Any:
    return x + y


def add_math(x: Any, y: Any) -> Any:
    return x + y


@pytest.fixture
def add(dispatcher: Dispatcher) -> dict[str, str]:
    sources = {
        "def": dispatcher.register_def(
            "t::add(Tensor x, Tensor y) -> Tensor", tags=["pointwise"]
        ).source
    }
    sources["cpu"] = dispatcher.register_impl("t::add", "CPU", add_cpu).source
    with pytest.warns(KernelOverrideWarning):
        sources["cpu2"] = dispatcher.register_impl("t::add", "CPU", add_cpu_v2, debug="v2").source
    sources["math"] = dispatcher.register_impl("t::add", None, add_math).source
    return sources


def test_dump(dispatcher: Dispatcher, add: dict[str, str]) -> None:
    assert dispatcher.dump("t::add") == (
        "name: t::add\n"
        "schema: t::add(Tensor x, Tensor y) -> Tensor\n"
        f"source: {add['def']}\n"
        "tags: pointwise\n"
        f"CPU: add_cpu_v2 at {add['cpu2']} (v2)\n"
        f"CPU (inactive): add_cpu at {add['cpu']}\n"
        f"CompositeImplicitAutograd[alias]: add_math at {add['math']}\n"
    )


def test_dump_table(dispatcher: Dispatcher, add: dict[str, str]) -> None:
    math = f"add_math at {add['math']} [math kernel]"
    fall = "fallthrough at <customop default> [fallthrough]"
    assert dispatcher.dump_table("t::add") == (
        f"CPU:                 add_cpu_v2 at {add['cpu2']} (v2) [kernel]\n"
        f"CUDA:                {math}\n"
        f"PrivateUse1:         {math}\n"
        f"PrivateUse2:         {math}\n"
        f"PrivateUse3:         {math}\n"
        f"Meta:                {math}\n"
        f"Fake:                {math}\n"
        f"AutogradCPU:         {fall}\n"
        f"AutogradCUDA:        {math}\n"
        f"AutogradPrivateUse1: {math}\n"
        f"AutogradPrivateUse2: {math}\n"
        f"AutogradPrivateUse3: {math}\n"
        f"AutogradMeta:        {math}\n"
        f"AutogradOther:       {math}\n"
        "Tracer:              (no kernel) [missing]\n"
        "Batched:             (no kernel) [missing]\n"
        "Python:              (no kernel) [missing]\n"
    )
    assert dispatcher.dump_table("t::add", kernels_only=True).count("\n") == 13


def test_table_entry_refuses_alias_keys(dispatcher: Dispatcher, add: dict[str, str]) -> None:
    entry = dispatcher.table_entry("t::add", "Fake")
    assert (entry.key, entry.kernel, entry.reason) == ("Fake", "add_math", "math kernel")
    with pytest.raises(DispatchKeyError) as caught:
        dispatcher.find_schema_or_throw("t::add").table_entry("Autograd")
    assert str(caught.value) == (
        "table_entry: 'Autograd' is an alias key. Alias keys only register kernels; calls run "
        "on runtime keys, which have the table entries. Pass one of its runtime keys: "
        "AutogradCPU, AutogradCUDA, AutogradPrivateUse1, AutogradPrivateUse2, "
        "AutogradPrivateUse3, AutogradMeta, AutogradOther."
    )


def test_find_op_and_handle_properties(dispatcher: Dispatcher, add: dict[str, str]) -> None:
    op = dispatcher.find_op("t::add")
    assert op is not None and dispatcher.find_op(op.name) is op
    assert str(op.schema) == "t::add(Tensor x, Tensor y) -> Tensor"
    assert op.tags == ("pointwise",) and op.dispatcher is dispatcher
    assert repr(op) == "<OperatorHandle t::add>"
    assert dispatcher.find_op("t::sub") is None


def test_find_schema_or_throw_suggests_names(dispatcher: Dispatcher, add: dict[str, str]) -> None:
    with pytest.raises(UnknownOperatorError) as caught:
        dispatcher.find_schema_or_throw("t::ad")
    assert str(caught.value) == (
        "find_schema_or_throw: operator 't::ad' is not defined. Only operators with a "
        "registered def have a schema. Register the def with register_def (or "
        "Library.define), or check the name. Did you mean 't::add'?"
    )
    assert isinstance(caught.value, LookupError) and caught.value.op == "t::ad"


def test_find_schema_or_throw_names_dangling_impls(dispatcher: Dispatcher) -> None:
    impl = dispatcher.register_impl("t::sub", "CPU", add_cpu)
    with pytest.raises(UnknownOperatorError) as caught:
        dispatcher.find_schema_or_throw("t::sub")
    assert str(caught.value).startswith(
        f"find_schema_or_throw: operator 't::sub' has impls (CPU at {impl.source}) but no def."
    )


def test_dump_of_an_unknown_op(dispatcher: Dispatcher) -> None:
    with pytest.raises(UnknownOperatorError, match=r"^dump: operator 't::nope' is not defined"):
        dispatcher.dump("t::nope")
    with pytest.raises(TypeError) as caught:
        dispatcher.dump(3)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "dump: expected an operator name such as 'mylib::add', got 3. Operators are identified "
        "by 'namespace::name.overload'. Pass the name as a str, an OperatorName, or an "
        "OperatorHandle."
    )


def test_registrations_for_dispatch_key(dispatcher: Dispatcher, add: dict[str, str]) -> None:
    dispatcher.register_impl("t::mul", "CUDA", add_cpu)
    dispatcher.register_def("t::nothing(Tensor x) -> Tensor")
    assert dispatcher.registrations_for_dispatch_key("CPU") == ("t::add",)
    assert dispatcher.registrations_for_dispatch_key("CompositeImplicitAutograd") == ("t::add",)
    assert dispatcher.registrations_for_dispatch_key() == ("t::add", "t::mul")


def test_snapshot_round_trips_through_json(dispatcher: Dispatcher, add: dict[str, str]) -> None:
    dispatcher.register_impl("t::mul", "CUDA", add_cpu)
    dispatcher.register_library("t")
    snap = dispatcher.snapshot()
    assert DispatcherSnapshot.model_validate_json(snap.model_dump_json()) == snap
    [add_info, mul_info] = snap.operators
    assert (add_info.def_count, add_info.def_and_impl_count) == (1, 4)
    assert [(k.key, k.kernel, k.active) for k in add_info.kernels] == [
        ("CPU", "add_cpu_v2", True),
        ("CPU", "add_cpu", False),
        ("CompositeImplicitAutograd", "add_math", True),
    ]
    assert mul_info.schema_text is None
    assert [(k.op, k.key) for k in snap.dangling_impls] == [("t::mul", "CUDA")]
    assert [lib.namespace for lib in snap.libraries] == ["t"]
    assert len(snap.fallbacks) == 7 and snap.listeners == 0

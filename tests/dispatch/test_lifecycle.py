"""Defs and impls: counts, dangling impls, erasure, kernel stacks, override warnings."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

import numpy as np
import pytest

from customop.dispatch import Dispatcher, RegistrationHandle
from customop.exceptions import KernelOverrideWarning, RegistrationError, UnknownOperatorError

SCHEMA = "t::op(Tensor x) -> Tensor"


def _counts(d: Dispatcher, name: str = "t::op") -> tuple[int, int] | None:
    ops = {op.name: op for op in d.snapshot().operators}
    info = ops.get(name)
    return None if info is None else (info.def_count, info.def_and_impl_count)


def test_def_and_impl_counts(dispatcher: Dispatcher) -> None:
    definition = dispatcher.register_def(SCHEMA)
    assert _counts(dispatcher) == (1, 1)
    impl = dispatcher.register_impl("t::op", "CPU", lambda x: x)
    assert _counts(dispatcher) == (1, 2)
    definition.remove()
    assert _counts(dispatcher) == (0, 1)
    assert dispatcher.find_op("t::op") is None
    impl.remove()
    assert _counts(dispatcher) is None
    assert dispatcher.registrations_for_dispatch_key() == ()


def test_impl_before_def_is_dangling_until_the_def_comes(dispatcher: Dispatcher) -> None:
    impl = dispatcher.register_impl("t::op", "CPU", lambda x: "cpu")
    [dangling] = dispatcher.find_dangling_impls()
    assert (dangling.op, dangling.key, dangling.source) == ("t::op", "CPU", impl.source)
    assert dispatcher.find_op("t::op") is None
    dispatcher.register_def(SCHEMA)
    assert dispatcher.find_dangling_impls() == ()
    assert dispatcher.find_schema_or_throw("t::op")(np.ones(1)) == "cpu"


def test_removing_the_def_leaves_dangling_impls(dispatcher: Dispatcher) -> None:
    definition = dispatcher.register_def(SCHEMA)
    dispatcher.register_impl("t::op", "CPU", lambda x: "cpu")
    op = dispatcher.find_schema_or_throw("t::op")
    definition.remove()
    assert [info.key for info in dispatcher.find_dangling_impls()] == ["CPU"]
    with pytest.raises(UnknownOperatorError) as caught:
        op(np.ones(1))
    assert str(caught.value) == (
        "t::op: operator 't::op' has no schema (it was never defined, or its def was removed). "
        "An operator needs its schema to bind and dispatch its arguments. Define it first, "
        "e.g. dispatcher.register_def('t::op(Tensor x) -> Tensor')."
    )


def test_a_kept_handle_works_again_after_erase_and_redefinition(dispatcher: Dispatcher) -> None:
    with dispatcher.register_def(SCHEMA):
        op = dispatcher.find_schema_or_throw("t::op")
    assert not op.has_schema
    dispatcher.register_def(SCHEMA)
    dispatcher.register_impl("t::op", "CPU", lambda x: "again")
    assert dispatcher.find_op("t::op") is op
    assert op(np.ones(1)) == "again"


def test_duplicate_def_names_both_sources_and_changes_nothing(dispatcher: Dispatcher) -> None:
    first = dispatcher.register_def(SCHEMA)
    before = dispatcher.snapshot()
    with pytest.raises(RegistrationError) as caught:
        dispatcher.register_def("t::op(Tensor y) -> Tensor")
    line = int(first.source.split(":")[1]) + 3
    assert str(caught.value) == (
        f"register_def: operator 't::op' is already defined, at {first.source}; this second "
        f"def is at test_lifecycle.py:{line}. An operator name and overload has exactly one "
        "schema, so calls know how to bind arguments. Remove the first def's handle, or give "
        "this one another overload name (e.g. 't::op.v2')."
    )
    assert dispatcher.snapshot() == before


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        pytest.param(
            "(Tensor x) -> Tensor",
            "register_def: schema '(Tensor x) -> Tensor' has no operator name. The dispatcher "
            "finds operators by name. Write 'namespace::name(...) -> ...'.",
            id="anonymous",
        ),
        pytest.param(
            "t::op(Tensor x, Tensor x) -> Tensor",
            "register_def: schema 't::op(Tensor x, Tensor x) -> Tensor' repeats argument name "
            "'x'. Calls bind keyword arguments by name, so names must be unique. Rename one.",
            id="repeated-argument",
        ),
    ],
)
def test_bad_defs_are_refused(dispatcher: Dispatcher, schema: str, message: str) -> None:
    from customop.schema import parse_schema

    with pytest.raises(RegistrationError) as caught:
        dispatcher.register_def(parse_schema(schema, strict=False))
    assert str(caught.value) == message
    assert dispatcher.snapshot().operators == ()


def _stack(d: Dispatcher, count: int) -> list[RegistrationHandle]:
    handles = [d.register_impl("t::op", "CPU", _returning(0))]
    with pytest.warns(KernelOverrideWarning):
        handles += [d.register_impl("t::op", "CPU", _returning(i)) for i in range(1, count)]
    return handles


def _returning(value: int) -> Callable[[object], int]:
    def kernel(x: object) -> int:
        return value

    kernel.__name__ = f"k{value}"
    return kernel


@pytest.mark.parametrize(
    "order", list(itertools.permutations(range(3))), ids=lambda o: "-".join(map(str, o))
)
def test_removal_in_any_order_restores_the_newest_remaining(
    dispatcher: Dispatcher, order: tuple[int, ...]
) -> None:
    dispatcher.register_def(SCHEMA)
    op = dispatcher.find_schema_or_throw("t::op")
    handles = _stack(dispatcher, 3)
    alive = {0, 1, 2}
    for index in order:
        handles[index].remove()
        alive.discard(index)
        if alive:
            assert op(np.ones(1)) == max(alive)
            active = [k for k in dispatcher.snapshot().operators[0].kernels if k.active]
            assert [k.kernel for k in active] == [f"k{max(alive)}"]
    assert dispatcher.table_entry("t::op", "CPU").reason == "missing"


def test_override_warning_text_points_at_the_user(dispatcher: Dispatcher) -> None:
    first = dispatcher.register_impl("t::op", "CPU", _returning(1))
    with pytest.warns(KernelOverrideWarning) as record:
        second = dispatcher.register_impl("t::op", "CPU", _returning(2))
    [warning] = record.list
    assert warning.filename == __file__
    assert str(warning.message) == (
        f"register_impl: operator 't::op' already has a kernel for dispatch key 'CPU' (k1 at "
        f"{first.source}); the new kernel k2 at {second.source} overrides it. Calls run the "
        "newest kernel, and removing its handle brings the previous one back. Remove the old "
        "kernel's handle first to replace it without this warning."
    )


def test_an_impl_failing_as_warning_error_changes_nothing(dispatcher: Dispatcher) -> None:
    dispatcher.register_impl("t::op", "CPU", _returning(1))
    before = dispatcher.snapshot()
    with pytest.raises(KernelOverrideWarning):
        dispatcher.register_impl("t::op", "CPU", _returning(2))  # filterwarnings=error
    assert dispatcher.snapshot() == before


def test_catch_all_impl_is_composite_implicit(dispatcher: Dispatcher) -> None:
    dispatcher.register_def(SCHEMA)
    handle = dispatcher.register_impl("t::op", None, _returning(7))
    assert handle.description == "impl t::op CompositeImplicitAutograd"
    assert dispatcher.find_schema_or_throw("t::op")(np.ones(1)) == 7


def test_impl_refuses_non_callables_and_unknown_keys(dispatcher: Dispatcher) -> None:
    with pytest.raises(TypeError) as caught:
        dispatcher.register_impl("t::op", "CPU", 3)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "register_impl: kernel 3 is not callable. The dispatcher calls the kernel to run the "
        "op. Pass a function (or `fallthrough`)."
    )
    with pytest.raises(ValueError, match=re.escape("Did you mean 'Meta'?")):
        dispatcher.register_impl("t::op", "Metaa", _returning(1))
    assert dispatcher.snapshot().operators == ()


@pytest.mark.parametrize("tags", ["pointwise", ["pointwise", 3]], ids=["str", "non-str"])
def test_tags_must_be_a_sequence_of_str(dispatcher: Dispatcher, tags: object) -> None:
    with pytest.raises(TypeError, match=r"^register_def: tag .* is not in a sequence of str\."):
        dispatcher.register_def(SCHEMA, tags=tags)  # type: ignore[arg-type]
    assert dispatcher.snapshot().operators == ()


def test_def_with_kernels_is_one_registration(dispatcher: Dispatcher) -> None:
    seen: list[object] = []

    class Listener:
        def on_operator_registered(self, op: object) -> None:
            seen.append(op(np.zeros(1)))  # type: ignore[operator]  # kernels already there

        def on_operator_deregistered(self, op: object) -> None:
            pass

    dispatcher.add_listener(Listener())
    handle = dispatcher.register_def(SCHEMA, kernels={"CPU": lambda x: "cpu", "Meta": np.negative})
    assert seen == ["cpu"]
    assert _counts(dispatcher) == (1, 3)
    assert dispatcher.table_entry("t::op", "Fake").reason == "meta kernel"
    handle.remove()
    assert _counts(dispatcher) is None
    handle.remove()  # idempotent


@pytest.mark.parametrize(
    ("kernels", "message"),
    [
        ({"Nope": np.negative}, "Nope"),
        ({"CPU": 3}, "is not callable"),
    ],
    ids=["bad-key", "not-callable"],
)
def test_def_with_a_bad_kernel_changes_nothing(
    dispatcher: Dispatcher, kernels: dict[str, object], message: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        dispatcher.register_def(SCHEMA, kernels=kernels)  # type: ignore[arg-type]
    assert _counts(dispatcher) is None
    assert dispatcher.find_op("t::op") is None

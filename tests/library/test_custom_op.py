"""@custom_op: options, kernels per device, fake impls, redefinition."""

from __future__ import annotations

import enum
from typing import Any, Literal

import numpy as np
import pytest

from customop import MutatesArgs, Tensor
from customop.dispatch import Dispatcher, DispatchKey
from customop.exceptions import RegistrationError
from customop.library import (
    CustomOpDef,
    Library,
    Ops,
    custom_op,
    handle_of,
    register_fake,
    register_kernel,
)


def test_custom_op_infers_registers_and_calls(dispatcher: Dispatcher, ops: Ops) -> None:
    @custom_op("mylib::scale", mutates_args=(), dispatcher=dispatcher)
    def scale(x: np.ndarray, *, factor: float = 2.0) -> np.ndarray:
        """Multiply by factor."""
        return x * factor

    x = np.arange(3.0)
    np.testing.assert_array_equal(scale(x), 2 * x)
    np.testing.assert_array_equal(scale(x, factor=3.0), 3 * x)
    np.testing.assert_array_equal(ops.mylib.scale(x), 2 * x)
    assert isinstance(scale, CustomOpDef)
    assert str(scale.schema) == "mylib::scale(Tensor x, *, float factor=2.) -> Tensor"
    assert scale.op is not None and scale.__doc__ == "Multiply by factor."
    assert dispatcher.table_entry("mylib::scale", "CPU").reason == "default backend kernel"


def test_call_form_and_explicit_schema(dispatcher: Dispatcher) -> None:
    def body(x: Any, n: Any) -> Any:
        return x * n

    op = custom_op(
        "mylib::times",
        body,
        mutates_args=(),
        schema="(Tensor x, int n) -> Tensor",
        dispatcher=dispatcher,
    )
    np.testing.assert_array_equal(op(np.ones(2), 3), [3.0, 3.0])
    assert str(op.schema) == "mylib::times(Tensor x, int n) -> Tensor"


def test_device_types_register_only_those_devices(dispatcher: Dispatcher) -> None:
    @custom_op("mylib::cpu_only", mutates_args=(), device_types="cpu", dispatcher=dispatcher)
    def cpu_only(x: Tensor) -> Tensor:
        return x

    assert dispatcher.table_entry("mylib::cpu_only", "CPU").reason == "kernel"
    assert dispatcher.table_entry("mylib::cpu_only", "CUDA").reason == "missing"


def test_register_kernel_as_decorator_and_call(dispatcher: Dispatcher) -> None:
    @custom_op("mylib::f", mutates_args=(), device_types="cuda", dispatcher=dispatcher)
    def f(x: Tensor) -> Tensor:
        return x

    @f.register_kernel("cpu")
    def _(x: Tensor) -> Tensor:
        return x * 10

    np.testing.assert_array_equal(f(np.ones(1)), [10.0])
    np.testing.assert_array_equal(_(np.ones(1)), [10.0])  # the decorated name is the function
    handle_of(_).remove()
    with pytest.raises(NotImplementedError):
        f(np.ones(1))
    five = lambda x: x * 5  # noqa: E731 -- the call form returns this very function
    assert f.register_kernel(["cpu", "meta"], five) is five
    np.testing.assert_array_equal(f(np.ones(1)), [5.0])
    assert dispatcher.table_entry("mylib::f", "Meta").reason == "kernel"
    handle_of(five).remove()
    assert dispatcher.table_entry("mylib::f", "Meta").reason == "missing"


def test_register_fake_checks_the_signature(dispatcher: Dispatcher) -> None:
    @custom_op("mylib::g", mutates_args=(), dispatcher=dispatcher)
    def g(x: Tensor, y: Tensor) -> Tensor:
        return x

    with pytest.raises(RegistrationError) as excinfo:

        @g.register_fake
        def _(x: Tensor, z: Tensor) -> Tensor:
            return x

    assert str(excinfo.value) == (
        "mylib::g.register_fake: the fake impl _(x: 'Tensor', z: 'Tensor') -> 'Tensor' does not "
        "match the schema mylib::g(Tensor x, Tensor y) -> Tensor: parameter 1 is named 'z', the "
        "schema's is 'y'. The dispatcher calls it with the op's arguments, positional ones by "
        "position and keyword-only ones by name. Give it the schema's parameters, in order."
    )
    assert dispatcher.table_entry("mylib::g", "Fake").reason != "kernel"
    fake = g.register_fake(lambda x, y: x)
    assert dispatcher.table_entry("mylib::g", "Fake").reason == "kernel"
    handle_of(fake).remove()
    assert dispatcher.table_entry("mylib::g", "Fake").reason != "kernel"


def test_mutates_args_marks_the_schema(dispatcher: Dispatcher) -> None:
    @custom_op("mylib::fill_", mutates_args=["x"], dispatcher=dispatcher)
    def fill_(x: np.ndarray, value: float) -> None:
        x[...] = value

    assert str(fill_.schema) == "mylib::fill_(Tensor(a0!) x, float value) -> ()"
    x = np.zeros(2)
    assert fill_(x, 3.0) is None
    np.testing.assert_array_equal(x, [3.0, 3.0])


def test_mutates_args_unknown_is_an_enum_member(dispatcher: Dispatcher) -> None:
    @custom_op("mylib::u", mutates_args=MutatesArgs.UNKNOWN, dispatcher=dispatcher)
    def u(x: Tensor) -> None: ...

    assert u.schema.is_mutable


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"name": "noname", "mutates_args": ()},
            "custom_op: option 'name': name 'noname' must be 'namespace::name' (or "
            "'namespace::name.overload', as torch's custom_op). The namespace keeps libraries "
            "apart. Write e.g. 'mylib::my_op'.",
        ),
        (
            {"name": "mylib::f", "mutates_args": "unknown"},
            "custom_op: option 'mutates_args': mutates_args='unknown' is a string. It names the "
            "mutated parameters. Pass a sequence of names, e.g. ['unknown'], or "
            "MutatesArgs.UNKNOWN.",
        ),
        (
            {"name": "mylib::f", "mutates_args": (), "device_types": "tpu"},
            "custom_op: device type 'tpu' is unknown. A kernel is registered for a backend "
            "device. Known device types: cpu, cuda, meta, privateuseone, privateusethree, "
            "privateusetwo (rename a PrivateUse backend to add one).",
        ),
    ],
    ids=["no-namespace", "magic-string", "device"],
)
def test_bad_options_register_nothing(
    dispatcher: Dispatcher, kwargs: dict[str, Any], message: str
) -> None:
    def f(x: Tensor) -> Tensor:
        return x

    with pytest.raises((ValueError, RegistrationError)) as excinfo:
        custom_op(kwargs.pop("name"), f, dispatcher=dispatcher, **kwargs)
    assert str(excinfo.value) == message
    assert dispatcher.snapshot().operators == ()


def test_redefinition_replaces_and_old_object_raises(dispatcher: Dispatcher) -> None:
    @custom_op("mylib::h", mutates_args=(), dispatcher=dispatcher)
    def h(x: Tensor) -> Tensor:
        return x

    old = h

    @custom_op("mylib::h", mutates_args=(), dispatcher=dispatcher)
    def h2(x: np.ndarray, n: int = 2) -> np.ndarray:
        return x * n

    np.testing.assert_array_equal(h2(np.ones(1)), [2.0])
    with pytest.raises(
        RegistrationError, match=r"was replaced by a newer one at .*test_custom_op\.py"
    ):
        old(np.ones(1))
    with pytest.raises(RegistrationError, match="was replaced"):
        old.register_fake(lambda x: x)


def test_failed_redefinition_keeps_the_old_one(dispatcher: Dispatcher) -> None:
    @custom_op("mylib::k", mutates_args=(), dispatcher=dispatcher)
    def k(x: Tensor) -> Tensor:
        return x

    with pytest.raises(Exception, match="infer_schema"):

        @custom_op("mylib::k", mutates_args=(), dispatcher=dispatcher)
        def k2(x: dict) -> Tensor:  # type: ignore[type-arg]
            return x  # type: ignore[return-value]

    np.testing.assert_array_equal(k(np.ones(1)), [1.0])


def test_name_owned_by_a_library_is_refused(dispatcher: Dispatcher) -> None:
    with Library("mylib", "DEF", dispatcher=dispatcher) as lib:
        lib.define("taken(Tensor x) -> Tensor")
        with pytest.raises(RegistrationError, match="already defined, not by @custom_op"):

            @custom_op("mylib::taken", mutates_args=(), dispatcher=dispatcher)
            def taken(x: Tensor) -> Tensor:
                return x


def test_free_functions_serve_library_ops(dispatcher: Dispatcher, ops: Ops) -> None:
    with Library("mylib", "DEF", dispatcher=dispatcher) as lib:
        lib.define("twice(Tensor x) -> Tensor")
        kernel = register_kernel("mylib::twice", "cpu", lambda x: 2 * x, dispatcher=dispatcher)
        fake = register_fake(ops.mylib.twice.default, lambda x: x, dispatcher=dispatcher)
        np.testing.assert_array_equal(ops.mylib.twice(np.ones(1)), [2.0])
        assert dispatcher.table_entry("mylib::twice", DispatchKey.Fake).reason == "kernel"
        for fn in (fake, kernel):
            handle_of(fn).remove()
        assert dispatcher.table_entry("mylib::twice", DispatchKey.Fake).reason != "kernel"
        with pytest.raises(RegistrationError, match="does not match the schema"):
            register_fake("mylib::twice", lambda y: y, dispatcher=dispatcher)


def test_literal_arguments_accept_only_their_values(dispatcher: Dispatcher) -> None:
    @custom_op("mylib::reduce", mutates_args=(), dispatcher=dispatcher)
    def reduce(x: np.ndarray, mode: Literal["sum", "mean"] = "sum") -> np.ndarray:
        return x.sum() if mode == "sum" else x.mean()

    assert reduce(np.ones(4), "mean") == 1.0
    with pytest.raises(TypeError) as excinfo:
        reduce(np.ones(4), "max")  # type: ignore[arg-type]
    assert str(excinfo.value).startswith(
        "mylib::reduce: argument 'mode' (position 1) expects one of 'sum', 'mean', got str 'max'."
    )
    assert str(excinfo.value).endswith("Pass one of those values.")


class Mode(enum.Enum):
    SUM = "sum"
    MEAN = "mean"


def test_enum_arguments_reach_the_kernel_as_members(dispatcher: Dispatcher) -> None:
    seen: list[object] = []

    @custom_op("mylib::pool", mutates_args=(), dispatcher=dispatcher)
    def pool(x: np.ndarray, mode: Mode = Mode.SUM) -> np.ndarray:
        seen.append(mode)
        return x.sum() if mode is Mode.SUM else x.mean()

    assert str(pool.schema) == 'mylib::pool(Tensor x, str mode="sum") -> Tensor'
    assert pool(np.ones(4), Mode.MEAN) == 1.0
    assert pool(np.ones(4), "mean") == 1.0  # type: ignore[arg-type]
    assert pool(np.ones(4)) == 4.0
    assert seen == [Mode.MEAN, Mode.MEAN, Mode.SUM]


def test_explicit_schema_must_agree_with_mutates_args(dispatcher: Dispatcher) -> None:
    def body(x: Any, n: Any) -> None:
        return None

    with pytest.raises(ValueError) as excinfo:
        custom_op(
            "mylib::w",
            body,
            mutates_args=["x"],
            schema="(Tensor x, int n) -> ()",
            dispatcher=dispatcher,
        )
    assert str(excinfo.value) == (
        "custom_op: 'mylib::w': mutates_args=['x'] but the schema writes [] (the op mutates "
        "{}). The schema's (a!) annotations are what callers and tracing rely on. Make "
        "mutates_args name exactly the arguments the schema writes."
    )
    ok = custom_op(
        "mylib::w",
        body,
        mutates_args=["x"],
        schema="(Tensor(a!) x, int n) -> ()",
        dispatcher=dispatcher,
    )
    assert ok.schema.mutated_arguments == ("x",)


def test_free_register_kernel_on_a_custom_op_belongs_to_it(dispatcher: Dispatcher) -> None:
    @custom_op("mylib::owned", mutates_args=(), device_types="cuda", dispatcher=dispatcher)
    def owned(x: Tensor) -> Tensor:
        return x

    register_kernel(owned, "cpu", lambda x: x * 3, dispatcher=dispatcher)
    np.testing.assert_array_equal(owned(np.ones(1)), [3.0])

    @custom_op("mylib::owned", mutates_args=(), device_types="cuda", dispatcher=dispatcher)
    def owned2(x: Tensor, n: int) -> Tensor:
        return x

    # The kernel went with the old definition: the new one has no CPU kernel.
    with pytest.raises(NotImplementedError):
        owned2(np.ones(1), 2)


def test_choices_hold_through_every_way_of_calling(dispatcher: Dispatcher, ops: Ops) -> None:
    seen: list[object] = []

    @custom_op("mylib::pool2", mutates_args=(), dispatcher=dispatcher)
    def pool2(x: np.ndarray, mode: Mode = Mode.SUM, how: Literal["a", "b"] = "a") -> np.ndarray:
        seen.append((mode, how))
        return x

    x = np.ones(2)
    for call in (pool2, pool2.op, ops.mylib.pool2, ops.mylib.pool2.default):
        call(x, Mode.MEAN, "b")
        call(x, "mean")
        with pytest.raises(TypeError, match="expects one of 'sum', 'mean', got str 'max'"):
            call(x, "max")
        with pytest.raises(TypeError, match="expects one of 'a', 'b', got str 'c'"):
            call(x, Mode.SUM, "c")
    assert seen == [(Mode.MEAN, "b"), (Mode.MEAN, "a")] * 4


def test_redefinition_drops_the_old_choices(dispatcher: Dispatcher, ops: Ops) -> None:
    @custom_op("mylib::pick", mutates_args=(), dispatcher=dispatcher)
    def pick(x: np.ndarray, how: Literal["a", "b"] = "a") -> np.ndarray:
        return x + (how == "c")

    with pytest.raises(TypeError, match="expects one of"):
        ops.mylib.pick(np.ones(1), "c")
    kept = ops.mylib.pick.default  # fetched before the redefinition

    @custom_op("mylib::pick", mutates_args=(), dispatcher=dispatcher)
    def pick2(x: np.ndarray, how: str = "a") -> np.ndarray:
        return x + (how == "c")

    np.testing.assert_array_equal(ops.mylib.pick(np.ones(1), "c"), [2.0])
    np.testing.assert_array_equal(kept(np.ones(1), "c"), [2.0])  # checks what pick2 checks


def test_an_old_overload_takes_up_new_choices(dispatcher: Dispatcher, ops: Ops) -> None:
    @custom_op("mylib::mode", mutates_args=(), dispatcher=dispatcher)
    def mode(x: np.ndarray, how: str = "a") -> np.ndarray:
        return x

    kept = ops.mylib.mode.default
    for _ in range(2):
        kept(np.ones(1), "z")  # fills its fast path

    @custom_op("mylib::mode", mutates_args=(), dispatcher=dispatcher)
    def mode2(x: np.ndarray, how: Literal["a", "b"] = "a") -> np.ndarray:
        return x

    for _ in range(2):
        with pytest.raises(TypeError, match="expects one of 'a', 'b', got str 'z'"):
            kept(np.ones(1), "z")
        kept(np.ones(1), "b")


def test_schema_text_may_name_the_op_itself(dispatcher: Dispatcher) -> None:
    op = custom_op(
        "mylib::named",
        lambda x: x,
        mutates_args=(),
        schema="mylib::named(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )
    assert str(op.schema) == "mylib::named(Tensor x) -> Tensor"
    with pytest.raises(ValueError, match="names the operator 'mylib::other'") as excinfo:
        custom_op(
            "mylib::named2",
            lambda x: x,
            mutates_args=(),
            schema="mylib::other(Tensor x) -> Tensor",
            dispatcher=dispatcher,
        )
    assert "Write the schema without a name, as in '(Tensor x) -> Tensor'" in str(excinfo.value)
    assert dispatcher.find_op("mylib::named2") is None


def test_call_code_is_built_on_first_call(dispatcher: Dispatcher) -> None:
    @custom_op("mylib::lazy", mutates_args=(), dispatcher=dispatcher)
    def lazy(x: np.ndarray) -> np.ndarray:
        return x + 1

    assert type(lazy) is CustomOpDef  # nothing generated at registration
    first = lazy.op
    np.testing.assert_array_equal(lazy(np.zeros(1)), [1.0])
    assert type(lazy) is not CustomOpDef and isinstance(lazy, CustomOpDef)
    assert lazy.op is first
    np.testing.assert_array_equal(lazy(np.zeros(1)), [1.0])


def test_replaced_before_its_first_call(dispatcher: Dispatcher) -> None:
    @custom_op("mylib::early", mutates_args=(), dispatcher=dispatcher)
    def early(x: np.ndarray) -> np.ndarray:
        return x

    @custom_op("mylib::early", mutates_args=(), dispatcher=dispatcher)
    def early2(x: np.ndarray) -> np.ndarray:
        return x * 2

    for use in (lambda: early(np.ones(1)), lambda: early.op):
        with pytest.raises(RegistrationError, match="was replaced by a newer one"):
            use()
    np.testing.assert_array_equal(early2(np.ones(1)), [2.0])


def test_an_overload_name_defines_an_overload(dispatcher: Dispatcher) -> None:
    # torch's custom_op("ns::f.overload") defines the overload; packets pick it by arguments.
    @custom_op("mylib::f", mutates_args=(), dispatcher=dispatcher)
    def f(x: np.ndarray) -> np.ndarray:
        return x + 1

    @custom_op("mylib::f.pair", mutates_args=(), dispatcher=dispatcher)
    def f_pair(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x + y

    assert str(f_pair.schema) == "mylib::f.pair(Tensor x, Tensor y) -> Tensor"
    ops = Ops(dispatcher)
    np.testing.assert_array_equal(ops.mylib.f(np.ones(1), np.ones(1)), [2.0])
    np.testing.assert_array_equal(ops.mylib.f(np.ones(1)), [2.0])
    np.testing.assert_array_equal(f_pair(np.ones(1), np.ones(1)), [2.0])

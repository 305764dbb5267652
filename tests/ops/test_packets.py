"""The ops namespace: packets, overloads, choosing overloads, staying current."""

from __future__ import annotations

import numpy as np
import pytest

from customop.dispatch import Dispatcher
from customop.exceptions import RegistrationError
from customop.library import Library, OpOverload, OpOverloadPacket, Ops


@pytest.fixture
def lib(dispatcher: Dispatcher) -> Library:
    lib = Library("mylib", "DEF", dispatcher=dispatcher)
    lib.define("add(Tensor x, Tensor y) -> Tensor")
    lib.define("add.Scalar(Tensor x, Scalar y) -> Tensor")
    lib.define("add.out(Tensor x, Tensor y, *, Tensor(a!) out) -> Tensor(a!)")
    lib.impl("add", lambda x, y: x + y, "CPU")
    lib.impl("add.Scalar", lambda x, y: x + y, "CPU")

    def add_out(x: np.ndarray, y: np.ndarray, *, out: np.ndarray) -> np.ndarray:
        np.add(x, y, out=out)
        return out

    lib.impl("add.out", add_out, "CPU")
    return lib


def test_packet_and_overloads(lib: Library, ops: Ops) -> None:
    packet = ops.mylib.add
    assert isinstance(packet, OpOverloadPacket)
    assert packet.overloads() == ["default", "Scalar", "out"]
    assert isinstance(packet.default, OpOverload)
    assert packet.Scalar.name.overload == "Scalar"
    assert packet.name == "mylib::add"
    assert (
        str(packet.out.schema)
        == "mylib::add.out(Tensor x, Tensor y, *, Tensor(a!) out) -> Tensor(a!)"
    )
    assert repr(packet) == "<OpOverloadPacket mylib::add: overloads default, Scalar, out>"
    assert repr(packet.default) == (
        "<OpOverload mylib::add.default: mylib::add(Tensor x, Tensor y) -> Tensor>"
    )


def test_packet_call_picks_the_overload_that_binds(lib: Library, ops: Ops) -> None:
    x = np.ones(2)
    np.testing.assert_array_equal(ops.mylib.add(x, x), [2.0, 2.0])
    np.testing.assert_array_equal(ops.mylib.add(x, 3), [4.0, 4.0])
    out = np.zeros(2)
    assert ops.mylib.add(x, x, out=out) is out
    np.testing.assert_array_equal(out, [2.0, 2.0])


def test_impossible_packet_call_lists_candidates(lib: Library, ops: Ops) -> None:
    with pytest.raises(TypeError) as excinfo:
        ops.mylib.add(np.ones(2), "a")
    assert str(excinfo.value) == (
        "mylib::add: no overload binds these arguments. A packet call picks the overload "
        "whose schema fits the arguments, types included. Pass arguments that fit one of "
        "the schemas below, or call that overload directly, e.g. mylib.add.default(...). "
        "Candidates:\n"
        "  mylib::add(Tensor x, Tensor y) -> Tensor: argument 'y' expects Tensor, got str\n"
        "  mylib::add.Scalar(Tensor x, Scalar y) -> Tensor: argument 'y' expects Scalar, got str\n"
        "  mylib::add.out(Tensor x, Tensor y, *, Tensor(a!) out) -> Tensor(a!): "
        "argument 'y' expects Tensor, got str"
    )


def test_ambiguous_packet_call_lists_candidates(dispatcher: Dispatcher, ops: Ops) -> None:
    with Library("amb", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x) -> Tensor")
        lib.define("f.other(Tensor y) -> Tensor")
        with pytest.raises(TypeError, match="ambiguous: 2 overloads"):
            ops.amb.f(np.ones(1))


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            ("nope",),
            "ops: no namespace 'nope'. A namespace appears once an operator is defined in it. "
            "Namespaces: mylib.",
        ),
        (
            ("mylb",),
            "ops: no namespace 'mylb'. A namespace appears once an operator is defined in it. "
            "Namespaces: mylib. Did you mean 'mylib'?",
        ),
        (
            ("mylib", "ad"),
            "ops.mylib: no operator 'ad'. Operators appear here once they are defined "
            "(custom_op or Library.define). Defined in 'mylib': add. Did you mean 'add'?",
        ),
        (
            ("mylib", "add", "Scalr"),
            "ops.mylib.add: no overload 'Scalr'. An overload is defined with the op's name "
            "plus '.overload'. Defined overloads: default, Scalar, out. Did you mean 'Scalar'?",
        ),
    ],
    ids=["namespace", "namespace-typo", "op-typo", "overload-typo"],
)
def test_missing_names_raise_attribute_error_with_close_matches(
    lib: Library, ops: Ops, path: tuple[str, ...], message: str
) -> None:
    with pytest.raises(AttributeError) as excinfo:
        target: object = ops
        for part in path:
            target = getattr(target, part)
    assert str(excinfo.value) == message


def test_removed_op_stops_and_readded_op_works(dispatcher: Dispatcher, ops: Ops) -> None:
    lib = Library("mylib", "DEF", dispatcher=dispatcher)
    lib.define("neg(Tensor x) -> Tensor")
    lib.impl("neg", np.negative, "CPU")
    overload = ops.mylib.neg.default
    x = np.ones(1)
    np.testing.assert_array_equal(overload(x), [-1.0])
    lib.close()
    with pytest.raises(LookupError, match="mylib::neg"):
        overload(x)
    with pytest.raises(AttributeError):
        ops.mylib.neg  # noqa: B018
    again = Library("mylib", "DEF", dispatcher=dispatcher)
    again.define("neg(Tensor x) -> Tensor")
    again.impl("neg", lambda x: -2 * x, "CPU")
    np.testing.assert_array_equal(overload(x), [-2.0])
    np.testing.assert_array_equal(ops.mylib.neg(x), [-2.0])
    again.close()


def test_redefined_schema_makes_old_overloads_raise(dispatcher: Dispatcher, ops: Ops) -> None:
    lib = Library("mylib", "DEF", dispatcher=dispatcher)
    lib.define("f(Tensor x) -> Tensor")
    lib.impl("f", lambda x: x, "CPU")
    old = ops.mylib.f.default
    lib.close()
    lib = Library("mylib", "DEF", dispatcher=dispatcher)
    lib.define("f(Tensor x, int n) -> Tensor")
    lib.impl("f", lambda x, n: x * n, "CPU")
    with pytest.raises(RegistrationError, match="redefined as mylib::f"):
        old(np.ones(1))
    np.testing.assert_array_equal(ops.mylib.f(np.ones(1), 3), [3.0])
    lib.close()


def test_redispatch_runs_an_explicit_key(lib: Library, ops: Ops, dispatcher: Dispatcher) -> None:
    from customop.dispatch import DispatchKey, DispatchKeySet

    x = np.ones(1)
    result = ops.mylib.add.default.redispatch(DispatchKeySet(DispatchKey.CPU), x, x)
    np.testing.assert_array_equal(result, [2.0])


def test_specialized_packet_follows_new_overloads(dispatcher: Dispatcher, ops: Ops) -> None:
    with Library("spec", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", lambda x: x + 1, "CPU")
        packet = ops.spec.f
        x = np.zeros(1)
        np.testing.assert_array_equal(packet(x), [1.0])
        np.testing.assert_array_equal(packet(x), [1.0])  # the specialized fast path
        lib.define("f.scaled(Tensor x, float k) -> Tensor")
        lib.impl("f.scaled", lambda x, k: x * k, "CPU")
        np.testing.assert_array_equal(packet(np.ones(1), 3.0), [3.0])
        np.testing.assert_array_equal(packet(x), [1.0])

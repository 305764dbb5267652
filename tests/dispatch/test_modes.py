"""Dispatch modes: ``with M():`` routes every op call through ``M.__dispatch__`` (torch's
TorchDispatchMode), on the dispatcher's Python key."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from customop import FakeTensor, FakeTensorMode, custom_op, empty_like, trace
from customop.dispatch import (
    Dispatcher,
    DispatchKey,
    DispatchMode,
    OperatorHandle,
    active_modes,
    local_keys,
)
from customop.exceptions import RegistrationError
from customop.library import CustomOpDef
from customop.tensor import install_backends


@pytest.fixture
def ops(dispatcher: Dispatcher) -> Iterator[tuple[CustomOpDef[Any, Any], CustomOpDef[Any, Any]]]:
    with install_backends(dispatcher):

        @custom_op("modes::add", mutates_args=(), dispatcher=dispatcher)
        def add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            return x + y

        @custom_op("modes::mul", mutates_args=(), dispatcher=dispatcher)
        def mul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            return x * y

        add.register_fake(lambda x, y: empty_like(x))
        mul.register_fake(lambda x, y: empty_like(x))
        yield add, mul


class Log(DispatchMode):
    def __init__(self, log: list[str], tag: str = "") -> None:
        self.log = log
        self.tag = tag

    def __dispatch__(
        self, op: OperatorHandle, types: tuple[type, ...], args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:  # fmt: skip
        self.log.append(f"{self.tag}{op.name}({', '.join(t.__name__ for t in types)})")
        return op(*args, **kwargs)


class ZeroMul(DispatchMode):
    """Replaces modes::mul's result; every other op runs unchanged."""

    def __dispatch__(
        self, op: OperatorHandle, types: tuple[type, ...], args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:  # fmt: skip
        if str(op.name) == "modes::mul":
            return np.zeros_like(args[0])
        return op(*args, **kwargs)


X = np.arange(3.0)


def test_logging_mode_sees_every_call(ops: Any) -> None:
    add, mul = ops
    log: list[str] = []
    with Log(log) as mode:
        assert active_modes() == (mode,)
        result = add(mul(X, X), X)
    assert log == ["modes::mul(ndarray)", "modes::add(ndarray)"]
    np.testing.assert_array_equal(result, X * X + X)
    assert active_modes() == ()
    assert DispatchKey.Python not in local_keys()[0]


def test_calls_outside_every_mode_are_not_seen(ops: Any) -> None:
    add, _ = ops
    log: list[str] = []
    with Log(log):
        pass
    add(X, X)
    assert log == []


def test_a_mode_replaces_one_ops_result(ops: Any) -> None:
    add, mul = ops
    with ZeroMul():
        np.testing.assert_array_equal(mul(X, X), np.zeros(3))
        np.testing.assert_array_equal(add(X, X), 2 * X)
    np.testing.assert_array_equal(mul(X, X), X * X)


def test_nested_modes_run_innermost_first(ops: Any) -> None:
    add, _ = ops
    log: list[str] = []
    with Log(log, "outer:"), Log(log, "inner:"):
        add(X, X)
    assert log == ["inner:modes::add(ndarray)", "outer:modes::add(ndarray)"]


def test_the_mode_is_popped_while_its_handler_runs(ops: Any) -> None:
    add, _ = ops
    seen: list[tuple[DispatchMode, ...]] = []

    class Peek(DispatchMode):
        def __dispatch__(self, op: Any, types: Any, args: Any, kwargs: Any) -> Any:
            seen.append(active_modes())
            return op(*args, **kwargs)

    outer = Peek()
    with outer, Peek():
        add(X, X)
    # The inner handler sees only the outer mode; the outer one sees none.
    assert seen == [(outer,), ()]


def test_inner_mode_replacing_hides_the_call_from_outer(ops: Any) -> None:
    _, mul = ops
    log: list[str] = []
    with Log(log), ZeroMul():
        mul(X, X)
    assert log == []


def test_mode_inside_fake_tensor_mode_sees_fakes(ops: Any) -> None:
    add, _ = ops
    log: list[str] = []
    with FakeTensorMode() as fake_mode, Log(log):
        out = add(fake_mode.from_real(X), X)
    assert isinstance(out, FakeTensor)
    assert log == ["modes::add(FakeTensor, ndarray)"]


def test_mode_inside_trace_sees_calls_and_the_graph_records_them(
    ops: Any, dispatcher: Dispatcher
) -> None:
    add, mul = ops
    log: list[str] = []

    def fn(x: Any) -> Any:
        with Log(log):
            return add(mul(x, x), x)

    graph = trace(fn, X, dispatcher=dispatcher)
    assert log == ["modes::mul(FakeTensor)", "modes::add(FakeTensor)"]
    assert [n.target for n in graph.nodes if n.target] == ["modes::mul", "modes::add"]
    np.testing.assert_array_equal(graph(X), X * X + X)


def test_a_mode_inside_trace_records_what_it_calls(ops: Any, dispatcher: Dispatcher) -> None:
    _, mul = ops

    class MulAsAdd(DispatchMode):
        def __dispatch__(self, op: Any, types: Any, args: Any, kwargs: Any) -> Any:
            if str(op.name) == "modes::mul":
                op = op.dispatcher.find_schema_or_throw("modes::add")
            return op(*args, **kwargs)

    def fn(x: Any) -> Any:
        with MulAsAdd():
            return mul(x, x)

    graph = trace(fn, X, dispatcher=dispatcher)
    assert [n.target for n in graph.nodes if n.target] == ["modes::add"]
    np.testing.assert_array_equal(graph(X), 2 * X)


def test_modes_are_per_thread(ops: Any) -> None:
    add, _ = ops
    log: list[str] = []
    other: list[str] = []
    entered, done = threading.Event(), threading.Event()

    def worker() -> None:
        entered.wait()
        add(X, X)  # the main thread's mode is not active here
        other.append("ran")
        done.set()

    thread = threading.Thread(target=worker)
    thread.start()
    with Log(log):
        entered.set()
        done.wait(10)
    thread.join()
    assert other == ["ran"]
    assert log == []


def test_modes_are_per_asyncio_task(ops: Any) -> None:
    add, _ = ops
    log: list[str] = []

    async def inside() -> None:
        with Log(log, "a:"):
            await asyncio.sleep(0)
            add(X, X)
            await asyncio.sleep(0)

    async def outside() -> None:
        await asyncio.sleep(0)
        add(X, X)
        await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(inside(), outside())

    asyncio.run(main())
    assert log == ["a:modes::add(ndarray)"]


def test_register_dispatch_mode_gives_one_op_its_rule(ops: Any) -> None:
    add, mul = ops
    log: list[str] = []

    def add_rule(mode: Log, op: Any, types: Any, args: Any, kwargs: Any) -> Any:
        mode.log.append("rule")
        return op(*args, **kwargs) + 1

    handle = add.register_dispatch_mode(Log, add_rule)
    with Log(log):
        np.testing.assert_array_equal(add(X, X), 2 * X + 1)
        mul(X, X)
    assert log == ["rule", "modes::mul(ndarray)"]
    assert handle.description == "dispatch mode rule modes::add Log"
    assert handle.source.startswith("test_modes.py:")
    handle.remove()
    log.clear()
    with Log(log):
        add(X, X)
    assert log == ["modes::add(ndarray)"]


def test_register_dispatch_mode_applies_to_subclasses(ops: Any) -> None:
    add, _ = ops

    class Quiet(Log):
        pass

    with add.register_dispatch_mode(Log, lambda mode, op, types, args, kwargs: "ruled"), Quiet([]):
        assert add(X, X) == "ruled"


def test_register_dispatch_mode_refuses_a_second_rule(ops: Any) -> None:
    add, _ = ops
    first = add.register_dispatch_mode(Log, lambda *a: None)
    with pytest.raises(RegistrationError, match=r"already has a rule for Log, registered at "):
        add.register_dispatch_mode(Log, lambda *a: None)
    first.remove()
    add.register_dispatch_mode(Log, lambda *a: None).remove()


@pytest.mark.parametrize(
    ("mode", "fn", "message"),
    [
        pytest.param(Log([]), print, "is not a DispatchMode subclass", id="instance"),
        pytest.param(int, print, "is not a DispatchMode subclass", id="other-class"),
        pytest.param(Log, 3, "is not callable", id="rule"),
    ],
)
def test_register_dispatch_mode_validates(ops: Any, mode: Any, fn: Any, message: str) -> None:
    add, _ = ops
    with pytest.raises(TypeError, match=message):
        add.register_dispatch_mode(mode, fn)


def test_exiting_out_of_order_is_an_error() -> None:
    outer, inner = Log([]), Log([])
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(RuntimeError, match="not the innermost active mode"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)
    assert active_modes() == ()


def test_a_users_own_python_fallback_is_kept() -> None:
    d = Dispatcher()
    seen: list[str] = []

    def mine(op: Any, keyset: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(op.name))
        return op.redispatch(keyset.below(DispatchKey.Python), *args, **kwargs)

    d.register_fallback("Python", mine)
    d.register_def("own::f(Tensor x) -> Tensor")
    d.register_impl("own::f", "CPU", lambda x: x)
    f = d.find_schema_or_throw("own::f")
    with Log([]):
        f(X)
    assert seen == ["own::f"]


def test_a_dispatcher_made_inside_a_mode_calls_its_ops() -> None:
    log: list[str] = []
    with Log(log):
        d = Dispatcher()  # made after the mode was entered: it never saw __enter__
        d.register_def("late::f(Tensor x) -> Tensor")
        d.register_impl("late::f", "CPU", lambda x: x + 1)
        f = d.find_schema_or_throw("late::f")
        np.testing.assert_array_equal(f(X), X + 1)
    assert log == ["late::f(ndarray)"]
    np.testing.assert_array_equal(f(X), X + 1)  # and after the block, without the mode

"""Listeners: replayed for existing ops, told of defs and their removal, in order."""

from __future__ import annotations

import pytest

from customop.dispatch import Dispatcher, OperatorHandle


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_operator_registered(self, op: OperatorHandle) -> None:
        self.events.append(("registered", str(op.schema)))

    def on_operator_deregistered(self, op: OperatorHandle) -> None:
        # The schema is still readable while listeners hear of the removal.
        self.events.append(("deregistered", str(op.schema)))


def test_listener_is_replayed_then_kept_informed(dispatcher: Dispatcher) -> None:
    dispatcher.register_def("t::a(Tensor x) -> Tensor")
    dispatcher.register_impl("t::dangling", "CPU", lambda x: x)
    recorder = Recorder()
    handle = dispatcher.add_listener(recorder)
    assert recorder.events == [("registered", "t::a(Tensor x) -> Tensor")]
    with dispatcher.register_def("t::b(Tensor x) -> Tensor"):
        pass
    assert recorder.events[1:] == [
        ("registered", "t::b(Tensor x) -> Tensor"),
        ("deregistered", "t::b(Tensor x) -> Tensor"),
    ]
    handle.remove()
    dispatcher.register_def("t::c(Tensor x) -> Tensor")
    assert len(recorder.events) == 3


def test_impls_do_not_notify(dispatcher: Dispatcher) -> None:
    recorder = Recorder()
    dispatcher.add_listener(recorder)
    dispatcher.register_impl("t::a", "CPU", lambda x: x)
    assert recorder.events == []


class Refusing(Recorder):
    def on_operator_registered(self, op: OperatorHandle) -> None:
        raise RuntimeError("no")


def test_a_failing_listener_fails_the_def_and_changes_nothing(dispatcher: Dispatcher) -> None:
    recorder = Recorder()
    dispatcher.add_listener(recorder)
    dispatcher.add_listener(Refusing())
    with pytest.raises(RuntimeError, match="no"):
        dispatcher.register_def("t::a(Tensor x) -> Tensor")
    assert dispatcher.find_op("t::a") is None
    assert dispatcher.snapshot().operators == ()
    # The listener that heard of the def also hears it taken back.
    assert [kind for kind, _ in recorder.events] == ["registered", "deregistered"]


def test_a_failing_replay_adds_no_listener(dispatcher: Dispatcher) -> None:
    dispatcher.register_def("t::a(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="no"):
        dispatcher.add_listener(Refusing())
    assert dispatcher.snapshot().listeners == 0


def test_listener_type_is_checked(dispatcher: Dispatcher) -> None:
    with pytest.raises(TypeError) as caught:
        dispatcher.add_listener(object())  # type: ignore[arg-type]
    assert str(caught.value).startswith("add_listener: <object object at ")
    assert str(caught.value).endswith(
        "is not an OperatorListener. The dispatcher calls its on_operator_registered(op) and "
        "on_operator_deregistered(op) methods. Define both."
    )


class FailingOnRemoval(Recorder):
    def on_operator_deregistered(self, op: OperatorHandle) -> None:
        raise RuntimeError("late")


def test_a_listener_failing_on_removal_does_not_stop_it(dispatcher: Dispatcher) -> None:
    dispatcher.add_listener(FailingOnRemoval())
    recorder = Recorder()
    dispatcher.add_listener(recorder)
    handle = dispatcher.register_def("t::a(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="late"):
        handle.remove()
    assert not handle.active
    assert dispatcher.find_op("t::a") is None
    assert recorder.events[-1] == ("deregistered", "t::a(Tensor x) -> Tensor")

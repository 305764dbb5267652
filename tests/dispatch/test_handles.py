"""RegistrationHandle: idempotent remove, context manager, and the source of the user's call."""

from __future__ import annotations

import inspect

from customop.dispatch import Dispatcher


def _line_below() -> str:
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return f"test_handles.py:{frame.f_back.f_lineno + 1}"


def test_source_is_the_users_line(dispatcher: Dispatcher) -> None:
    expected = _line_below()
    handle = dispatcher.register_def("t::op(Tensor x) -> Tensor")
    assert handle.source == expected
    assert handle.description == "def t::op"
    assert repr(handle) == f"<RegistrationHandle def t::op at {expected}>"


def test_remove_is_idempotent(dispatcher: Dispatcher) -> None:
    handle = dispatcher.register_def("t::op(Tensor x) -> Tensor")
    assert handle.active
    handle.remove()
    handle.remove()
    assert not handle.active
    assert repr(handle).endswith("(removed)>")
    assert dispatcher.find_op("t::op") is None


def test_handle_is_a_context_manager(dispatcher: Dispatcher) -> None:
    with dispatcher.register_def("t::op(Tensor x) -> Tensor") as handle:
        assert dispatcher.find_op("t::op") is not None
    assert not handle.active
    assert dispatcher.find_op("t::op") is None


def test_dropping_a_handle_keeps_the_registration(dispatcher: Dispatcher) -> None:
    dispatcher.register_def("t::op(Tensor x) -> Tensor")
    assert dispatcher.find_op("t::op") is not None


def test_frames_inside_customop_are_skipped(dispatcher: Dispatcher) -> None:
    # A front-end inside the package registers on the user's behalf; simulate one by
    # compiling a helper whose code claims a file inside customop.
    import customop.dispatch as package

    inside = package.__file__.replace("__init__.py", "_frontend_double.py")
    namespace: dict[str, object] = {}
    code = compile(
        "def define(d):\n    return d.register_def('t::op(Tensor x) -> Tensor')\n", inside, "exec"
    )
    exec(code, namespace)
    expected = _line_below()
    handle = namespace["define"](dispatcher)  # type: ignore[operator]
    assert handle.source == expected

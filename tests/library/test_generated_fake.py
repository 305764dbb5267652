"""A @custom_op that writes its inputs and returns nothing gets a fake impl (torch's rule)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from customop import FakeTensorMode, MissingKernelError, custom_op, handle_of, opcheck, trace
from customop.dispatch import Dispatcher, DispatchKey
from customop.tensor import install_backends


@pytest.fixture
def d() -> Dispatcher:
    dispatcher = Dispatcher()
    install_backends(dispatcher)
    return dispatcher


def _fill(d: Dispatcher, **options: Any) -> Any:
    def fill_(x: np.ndarray, value: float) -> None:
        x[...] = value

    return custom_op("gen::fill_", fill_, mutates_args=["x"], dispatcher=d, **options)


def test_mutating_op_returning_nothing_runs_on_fakes(d: Dispatcher) -> None:
    fill_ = _fill(d)
    with FakeTensorMode() as mode:
        assert fill_(mode.from_real(np.zeros(3)), 1.0) is None
    assert d.table_entry("gen::fill_", "Fake").reason == "meta kernel"
    assert "mutates_and_returns_nothing" in d.dump_table("gen::fill_")


def test_it_traces_and_passes_opcheck(d: Dispatcher) -> None:
    fill_ = _fill(d)
    graph = trace(lambda x: fill_(x, 2.0), np.zeros(2), dispatcher=d)
    buffer = np.zeros(2)
    graph.run(buffer)
    assert buffer.tolist() == [2.0, 2.0]
    assert set(opcheck(fill_, (np.zeros(2), 1.0)).values()) == {"SUCCESS"}


def test_a_registered_fake_overrides_it_without_a_warning_and_removal_restores_it(
    d: Dispatcher,
) -> None:
    fill_ = _fill(d)
    calls = []

    def fake(x: np.ndarray, value: float) -> None:
        calls.append(value)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fill_.register_fake(fake)
    with FakeTensorMode() as mode:
        fill_(mode.from_real(np.zeros(1)), 3.0)
    assert calls == [3.0]
    handle_of(fake).remove()
    with FakeTensorMode() as mode:
        fill_(mode.from_real(np.zeros(1)), 4.0)
    assert calls == [3.0]
    assert d.table_entry("gen::fill_", "Fake").reason == "meta kernel"


@pytest.mark.parametrize(
    ("mutates", "returns"),
    [pytest.param((), None, id="functional-returning-nothing"),
     pytest.param(["x"], np.ndarray, id="mutating-returning-a-tensor")],
)  # fmt: skip
def test_other_ops_get_no_generated_fake(d: Dispatcher, mutates: list[str], returns: Any) -> None:
    def body(x: np.ndarray) -> Any:
        return None if returns is None else x.copy()

    body.__annotations__["return"] = returns
    op = custom_op("gen::other", body, mutates_args=mutates, dispatcher=d)
    assert d.table_entry("gen::other", "Fake").reason == "missing"
    with FakeTensorMode() as mode, pytest.raises(MissingKernelError):
        op(mode.from_real(np.zeros(1)))


def test_an_explicit_meta_kernel_is_kept(d: Dispatcher) -> None:
    _fill(d, device_types=["cpu", "meta"])
    entry = d.table_entry("gen::fill_", DispatchKey.Meta)
    assert entry.kernel is not None
    assert "mutates_and_returns_nothing" not in d.dump_table("gen::fill_")

"""Wrapper fallbacks (register_fallback(..., wrapper=True)) serve ahead of composite kernels."""

from __future__ import annotations

from typing import Any

import pytest

from customop.dispatch import Dispatcher, DispatchKey, DispatchKeySet, OperatorHandle


class Wrapped:
    """An array type that wraps others, as a dask array does."""


def _wrapper_fallback(op: OperatorHandle, keyset: DispatchKeySet, *args: Any) -> str:
    return "fallback"


@pytest.fixture
def op(dispatcher: Dispatcher) -> OperatorHandle:
    dispatcher.register_def("t::op(Tensor x) -> Tensor")
    dispatcher.register_array_type(Wrapped, DispatchKey.PrivateUse1)
    return dispatcher.find_schema_or_throw("t::op")


@pytest.mark.parametrize(
    ("alias", "reason"),
    [
        (DispatchKey.CompositeExplicitAutograd, "default backend kernel"),
        (None, "math kernel"),  # catch-all: CompositeImplicitAutograd
    ],
    ids=["explicit", "implicit"],
)
def test_wrapper_fallback_beats_composite_kernels(
    dispatcher: Dispatcher, op: OperatorHandle, alias: DispatchKey | None, reason: str
) -> None:
    dispatcher.register_impl("t::op", alias, lambda x: "composite")
    assert dispatcher.table_entry("t::op", "PrivateUse1").reason == reason
    handle = dispatcher.register_fallback("PrivateUse1", _wrapper_fallback, wrapper=True)
    assert dispatcher.table_entry("t::op", "PrivateUse1").reason == "backend fallback"
    assert op.redispatch(DispatchKeySet(DispatchKey.PrivateUse1), Wrapped()) == "fallback"
    handle.remove()
    assert dispatcher.table_entry("t::op", "PrivateUse1").reason == reason


def test_plain_fallback_still_loses_to_composite(
    dispatcher: Dispatcher, op: OperatorHandle
) -> None:
    dispatcher.register_impl("t::op", DispatchKey.CompositeExplicitAutograd, lambda x: "composite")
    dispatcher.register_fallback("PrivateUse1", _wrapper_fallback)
    assert op(Wrapped()) == "composite"


def test_a_kernel_on_the_key_beats_the_wrapper_fallback(
    dispatcher: Dispatcher, op: OperatorHandle
) -> None:
    dispatcher.register_fallback("PrivateUse1", _wrapper_fallback, wrapper=True)
    with dispatcher.register_impl("t::op", "PrivateUse1", lambda x: "own"):
        assert op(Wrapped()) == "own"
    assert op(Wrapped()) == "fallback"

"""The ops backward calls itself: seeds (``ones_like``), zeros, and accumulation (``add``).

They are ordinary ops in the ``autograd`` namespace of each dispatcher a
transform runs on, with fake impls and formulas of their own, so a traced
backward records them and a nested transform differentiates through them.
Their kernels fill an ``empty_like`` of the input, which every backend (and
a 0-d array, where ``a + b`` would give a numpy scalar) supports.
"""

from __future__ import annotations

from typing import Any, Final

from customop.dispatch import Dispatcher, DispatchKey, OperatorHandle
from customop.library._autograd import AutogradFormula
from customop.tensor import empty_like

__all__ = ["define_builtins"]

_SOURCE: Final = "<customop autograd>"
_CEA: Final = DispatchKey.CompositeExplicitAutograd


def add(a: Any, b: Any) -> Any:
    """``a + b`` in a new array of ``a``'s backend and shape."""
    out = empty_like(a)
    out[...] = a
    out += b
    return out


def ones_like(x: Any) -> Any:
    """A new array of ones shaped like ``x``."""
    out = empty_like(x)
    out[...] = 1
    return out


def zeros_like(x: Any) -> Any:
    """A new array of zeros shaped like ``x``."""
    out = empty_like(x)
    out[...] = 0
    return out


def _fake_add(a: Any, b: Any) -> Any:
    return empty_like(a)


def _fake_like(x: Any) -> Any:
    return empty_like(x)


def _add_backward(ctx: Any, grad: Any) -> tuple[Any, Any]:
    return grad, grad


def _constant_backward(ctx: Any, grad: Any) -> None:
    return None


def _define(
    dispatcher: Dispatcher, schema: str, kernel: Any, fake: Any, backward: Any
) -> OperatorHandle:
    name = schema.split("(", 1)[0]
    found = dispatcher.find_op(name)
    if found is not None and found.has_schema:
        return found  # defined by an earlier install that was garbage collected
    kernels: dict[DispatchKey | str, Any] = {_CEA: kernel, DispatchKey.Fake: fake}
    dispatcher.register_def(schema, source=_SOURCE, kernels=kernels)
    handle = dispatcher.find_schema_or_throw(name)
    dispatcher.register_impl(
        handle.name, DispatchKey.Autograd, _formula(handle, backward), boxed=True, source=_SOURCE
    )
    return handle


def _formula(handle: OperatorHandle, backward: Any) -> AutogradFormula:
    return AutogradFormula(backward, None, handle.schema)


def define_builtins(
    dispatcher: Dispatcher,
) -> tuple[OperatorHandle, OperatorHandle, OperatorHandle]:
    """Define ``autograd::add``, ``autograd::ones_like`` and ``autograd::zeros_like``."""
    return (
        _define(
            dispatcher, "autograd::add(Tensor a, Tensor b) -> Tensor", add, _fake_add, _add_backward
        ),
        _define(
            dispatcher,
            "autograd::ones_like(Tensor x) -> Tensor",
            ones_like,
            _fake_like,
            _constant_backward,
        ),
        _define(
            dispatcher,
            "autograd::zeros_like(Tensor x) -> Tensor",
            zeros_like,
            _fake_like,
            _constant_backward,
        ),
    )

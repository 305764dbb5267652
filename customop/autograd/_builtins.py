"""The ops backward calls itself: seeds (``ones_like``), zeros, and accumulation (``add``).

They are ordinary ops in the ``autograd`` namespace of each dispatcher a
transform runs on, with fake impls and formulas of their own, so a traced
backward records them and a nested transform differentiates through them.
Their kernels fill an ``empty_like`` of the input, which every backend (and
a 0-d array, where ``a + b`` would give a numpy scalar) supports.
"""

from __future__ import annotations

import weakref
from typing import Any, Final

from customop.autograd._engine import FORMULA_KEY, NUMPY_ADAPTER, NUMPY_KEYS, record_untracked
from customop.autograd._formula import AutogradFormula
from customop.autograd._tracked import Tracked
from customop.dispatch import (
    DEFAULT_SOURCE,
    Dispatcher,
    DispatchKey,
    DispatchKeySet,
    OperatorHandle,
    RegistryLock,
    fallthrough,
)
from customop.tensor import add_adapter, empty_like

__all__ = ["Builtins", "define_builtins", "install"]

_SOURCE: Final = "<customop autograd>"
_CEA: Final = DispatchKey.CompositeExplicitAutograd


def _kernels(dispatcher: Dispatcher) -> tuple[Any, Any, Any]:
    """The kernels, allocating with ``dispatcher``'s backends (user array types included)."""

    def add(a: Any, b: Any) -> Any:
        out = empty_like(a, dispatcher=dispatcher)
        out[...] = a
        out += b
        return out

    def ones_like(x: Any) -> Any:
        out = empty_like(x, dispatcher=dispatcher)
        out[...] = 1
        return out

    def zeros_like(x: Any) -> Any:
        out = empty_like(x, dispatcher=dispatcher)
        out[...] = 0
        return out

    return add, ones_like, zeros_like


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
        handle.name, FORMULA_KEY, _formula(handle, backward), boxed=True, source=_SOURCE
    )
    return handle


def _formula(handle: OperatorHandle, backward: Any) -> AutogradFormula:
    return AutogradFormula(backward, None, handle.schema)


def define_builtins(
    dispatcher: Dispatcher,
) -> tuple[OperatorHandle, OperatorHandle, OperatorHandle]:
    """Define ``autograd::add``, ``autograd::ones_like`` and ``autograd::zeros_like``."""
    add, ones_like, zeros_like = _kernels(dispatcher)
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


class Builtins:
    """The ops backward itself calls on one dispatcher (so traces record them too)."""

    __slots__ = ("add", "ones_like", "zeros_like")

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.add, self.ones_like, self.zeros_like = define_builtins(dispatcher)


# Only a weak mark per dispatcher: anything holding its ops would keep it alive.
_installed: weakref.WeakSet[Dispatcher] = weakref.WeakSet()
_install_lock = RegistryLock()


def install(dispatcher: Dispatcher) -> Builtins:
    """Make ``dispatcher`` ready for transforms (once): the Autograd fallback and builtins.

    The default fallthrough on AutogradOther is replaced by `record_untracked`
    (the per-backend autograd keys keep theirs); a fallback the user
    registered on the Autograd keys is left alone.
    """
    if dispatcher in _installed:
        return Builtins(dispatcher)  # defined already: looked up
    with _install_lock:
        if dispatcher in _installed:
            return Builtins(dispatcher)
        default = dispatcher.autograd_default
        if default is not None and default.active:
            default.remove()
            for key in DispatchKey.Autograd.expansion - FORMULA_KEY:
                # Still the dispatcher's own default: dumps show it as before.
                dispatcher.register_fallback(key, fallthrough, source=DEFAULT_SOURCE)
        if dispatcher.fallback_source(FORMULA_KEY) is None:
            dispatcher.register_fallback(FORMULA_KEY, record_untracked, source=_SOURCE)
        # Wrappers are tensors here, and always reach the autograd kernels, which unwrap
        # them: no kernel sees one, transform or not.
        dispatcher.register_array_type(Tracked, DispatchKeySet(FORMULA_KEY))
        # With numpy's adapter, so empty_like(x) in fn makes a (constant) numpy array.
        add_adapter(dispatcher, NUMPY_ADAPTER, NUMPY_KEYS)
        builtins = Builtins(dispatcher)
        _installed.add(dispatcher)
    return builtins

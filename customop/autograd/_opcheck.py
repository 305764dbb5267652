"""opcheck's gradient checks (``opcheck(..., grad=True)``), added from this layer.

``test_autograd_registration`` has torch's meaning: gradients must flow
through the op by a registration on an autograd key, not by accident of a
backend kernel. On torch tensors it is torch's check: it runs when an input
requires grad, passes when the op has a kernel on ``Autograd`` or the inputs'
``Autograd<Backend>`` key, a CompositeImplicitAutograd kernel or a customop
formula, and otherwise fails when an output (not an input) requires grad,
as one does when a backend kernel records torch autograd itself. customop
arrays carry no ``requires_grad``, so on them the caller says gradients
matter by passing ``grad=True``, and an op with float inputs and a backend
kernel needs a formula or a CompositeImplicitAutograd kernel.
``test_gradcheck`` runs `gradcheck` on the sample call.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Any, Final

from customop.autograd._formula import formula_of
from customop.autograd._gradcheck import gradcheck
from customop.autograd._tape import differentiable
from customop.dispatch import DispatchKey, OperatorHandle
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import GradcheckError
from customop.fake import GRAD_CHECKS, CheckOptions, check_failed
from customop.ops import operator_handle
from customop.tensor import device_of

__all__ = ["check_autograd_registration", "check_gradients"]

_CHECK: Final = "test_autograd_registration"


def _flat(values: Sequence[Any]) -> list[Any]:
    return [i for v in values for i in (v if isinstance(v, list | tuple) else (v,))]


def _floats(args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    return any(differentiable(value) for value in _flat([*args, *kwargs.values()]))


def _handle(op: Any) -> OperatorHandle:
    return operator_handle(op, default_dispatcher, "opcheck")


def _torch_tensors(values: list[Any]) -> list[Any]:
    return [v for v in values if isinstance(getattr(v, "requires_grad", None), bool)]


def check_autograd_registration(
    op: Any, name: str, args: Sequence[Any], kwargs: dict[str, Any], options: CheckOptions
) -> None:
    """Fail when gradients cannot flow through ``op`` (torch's check of that name)."""
    handle = _handle(op)
    keys = handle.kernel_keys()
    registered = DispatchKey.CompositeImplicitAutograd in keys or formula_of(handle) is not None
    tensors = _torch_tensors(_flat([*args, *kwargs.values()]))
    if tensors:
        registered = registered or _has_autograd_kernel(keys)
        _check_torch(op, name, args, kwargs, tensors, registered=registered)
        return
    if not _floats(args, kwargs) or registered:
        return  # nothing to differentiate, or a registration that differentiates
    backends = sorted(
        key.name for key in keys if key.is_backend or key is DispatchKey.CompositeExplicitAutograd
    )
    if not backends:
        return
    raise check_failed(
        name, _CHECK,
        f"{name} has float tensor inputs and a kernel for {', '.join(backends)}, but no "
        "autograd formula and no CompositeImplicitAutograd kernel, so no gradient can flow "
        "through it. Register a formula with register_autograd(backward, setup_context=...), "
        "or, for an op meant only for inference, leave out grad=True.",
    )  # fmt: skip


def _has_autograd_kernel(keys: frozenset[DispatchKey]) -> bool:
    return any(key is DispatchKey.Autograd or key.is_autograd for key in keys)


def _check_torch(
    op: Any,
    name: str,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    tensors: list[Any],
    *,
    registered: bool,
) -> None:
    """torch's autograd_registration_check on torch tensors."""
    if registered or not any(t.requires_grad for t in tensors):
        return
    devices = {device_of(t).type for t in tensors}
    if not devices <= {"cpu", "cuda"}:
        return  # torch's check knows cpu and cuda autograd keys only
    call_args, call_kwargs = copy.deepcopy(tuple(args)), copy.deepcopy(kwargs)
    inputs = {id(v) for v in _flat([*call_args, *call_kwargs.values()])}
    outputs = op(*call_args, **call_kwargs)
    leaked = [
        out
        for out in _flat([outputs])
        if getattr(out, "requires_grad", False) is True and id(out) not in inputs
    ]
    if leaked:
        raise check_failed(
            name, _CHECK,
            f"{name}: at least one output of this operator has requires_grad=True but the "
            "operator does not have an autograd kernel defined at an autograd key (e.g. "
            "DispatchKey::Autograd). Its kernel records torch's autograd itself, so the "
            "gradient skips customop and torch (this could mean that you have incorrectly "
            "registered an autograd kernel to a non-Autograd DispatchKey). Register the "
            "autograd.Function on the 'Autograd' key, a formula with register_autograd, or "
            "the body as CompositeImplicitAutograd.",
        )  # fmt: skip


def check_gradients(
    op: Any, name: str, args: Sequence[Any], kwargs: dict[str, Any], options: CheckOptions
) -> None:
    """Fail when ``op``'s formula disagrees with finite differences at the sample call."""
    if not _floats(args, {}):
        return

    try:
        gradcheck(functools.partial(op, **kwargs), args, dispatcher=op.dispatcher)
    except GradcheckError as error:
        raise check_failed(name, "test_gradcheck", str(error)) from None


GRAD_CHECKS[_CHECK] = check_autograd_registration
GRAD_CHECKS["test_gradcheck"] = check_gradients

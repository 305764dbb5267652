"""opcheck's gradient checks (``opcheck(..., grad=True)``), added from this layer.

``test_autograd_registration`` has torch's meaning: an op with float tensor
inputs and a backend kernel needs a formula or a CompositeImplicitAutograd
kernel, else gradients cannot flow through it. torch skips the check when no
input requires grad; customop arrays carry no ``requires_grad``, so the
caller says gradients matter by passing ``grad=True``. ``test_gradcheck``
runs `gradcheck` on the sample call.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from customop.autograd._formula import formula_of
from customop.autograd._gradcheck import gradcheck
from customop.autograd._tape import differentiable
from customop.dispatch import DispatchKey
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import GradcheckError, OpCheckError
from customop.fake import GRAD_CHECKS, CheckOptions
from customop.ops import operator_handle

__all__ = ["check_autograd_registration", "check_gradients"]


def _floats(args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    values = [*args, *kwargs.values()]
    flat = [i for v in values for i in (v if isinstance(v, list | tuple) else (v,))]
    return any(differentiable(value) for value in flat)


def check_autograd_registration(
    op: Any, name: str, args: Sequence[Any], kwargs: dict[str, Any], options: CheckOptions
) -> None:
    """Fail when gradients cannot flow through ``op`` (torch's check of that name)."""
    if not _floats(args, kwargs):
        return  # nothing to differentiate
    handle = operator_handle(op, default_dispatcher, "opcheck")
    keys = set(handle.kernel_keys())
    if DispatchKey.CompositeImplicitAutograd in keys or formula_of(handle) is not None:
        return
    backends = sorted(
        key.name for key in keys if key.is_backend or key is DispatchKey.CompositeExplicitAutograd
    )
    if not backends:
        return
    raise OpCheckError(
        f"opcheck({name}): test_autograd_registration failed: {name} has float tensor "
        f"inputs and a kernel for {', '.join(backends)}, but no autograd formula and no "
        "CompositeImplicitAutograd kernel, so no gradient can flow through it. Register "
        "a formula with register_autograd(backward, setup_context=...), or, for an op "
        "meant only for inference, leave out grad=True."
    )


def check_gradients(
    op: Any, name: str, args: Sequence[Any], kwargs: dict[str, Any], options: CheckOptions
) -> None:
    """Fail when ``op``'s formula disagrees with finite differences at the sample call."""
    if not _floats(args, {}):
        return

    try:
        gradcheck(functools.partial(op, **kwargs), args, dispatcher=op.dispatcher)
    except GradcheckError as error:
        raise OpCheckError(f"opcheck({name}): test_gradcheck failed: {error}") from None


GRAD_CHECKS["test_autograd_registration"] = check_autograd_registration
GRAD_CHECKS["test_gradcheck"] = check_gradients

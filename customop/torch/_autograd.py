"""customop's autograd formula as torch's: ``torch.library.register_autograd`` trampolines.

torch calls ``setup_context(ctx, inputs, output)`` and ``backward(ctx, *grads)``
with its own ``ctx``, which has what a customop formula uses
(``save_for_backward``, ``saved_tensors``, ``needs_input_grad``, free
attributes). Each trampoline looks the op's current formula up per call, so a
formula replaced in customop is the one torch runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from customop.autograd import formula_of
from customop.dispatch import OperatorHandle

if TYPE_CHECKING:
    from customop.torch._mirror import TorchMirror

__all__ = ["has_formula", "register_formula"]

_library: Any = torch.library  # untyped for mypy


def has_formula(handle: OperatorHandle) -> bool:
    """Whether the op has a customop autograd formula now."""
    return formula_of(handle) is not None


def register_formula(mirror: TorchMirror, lib: Any) -> None:
    """Register trampolines to the op's formula in torch, owned by ``lib``."""
    handle = mirror.handle
    name = str(handle.name)

    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        formula = formula_of(handle)
        if formula is not None and formula.setup_context is not None:
            formula.setup_context(ctx, inputs, output)

    def backward(ctx: Any, *grads: Any) -> Any:
        formula = formula_of(handle)
        if formula is None:
            raise RuntimeError(
                f"{name}: backward ran, but the op's customop autograd formula was removed. "
                "torch recorded the call while the formula existed. Register the formula "
                "again, or run the forward again after removing it."
            )
        return formula.backward(ctx, *grads)

    backward.__name__ = f"customop_backward_{handle.name.name}"
    _library.register_autograd(name, backward, setup_context=setup_context, lib=lib)

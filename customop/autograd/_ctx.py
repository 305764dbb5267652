"""`AutogradContext`: the ``ctx`` that ``setup_context`` fills and ``backward`` reads."""

from __future__ import annotations

from typing import Any

__all__ = ["AutogradContext"]


class AutogradContext:
    """What ``setup_context(ctx, inputs, output)`` and ``backward(ctx, *grads)`` share.

    As torch's ``ctx``: ``save_for_backward(*tensors)`` and ``saved_tensors``,
    ``needs_input_grad`` (one bool per input of the op), and free attributes
    (``ctx.shape = x.shape``) for anything else backward needs.
    """

    # No __slots__: free attributes are part of the contract.

    def __init__(self, needs_input_grad: tuple[bool, ...]) -> None:
        self._saved: tuple[Any, ...] = ()
        self.needs_input_grad = needs_input_grad

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep ``tensors`` for backward (a second call replaces the first, as in torch).

        Args:
            *tensors: Arrays (or None) that backward reads from ``saved_tensors``.
        """
        self._saved = tensors

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        """What `save_for_backward` kept, in order."""
        return self._saved

    def __repr__(self) -> str:
        return f"<AutogradContext needs_input_grad={self.needs_input_grad}>"

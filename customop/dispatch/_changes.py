"""Kernel-change news: listeners that define ``on_operator_changed`` hear every
kernel pushed on or popped off an operator (adapters that mirror an op's kernels
in another system, such as ``customop.torch``, keep up with it this way).

The method is optional, so `OperatorListener` stays a two-method protocol; it
runs under the registration lock, after the op's table has been rebuilt, so
the listener reads the new kernels. A failing listener cannot undo the
registration that is already made: its error becomes a warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from customop.dispatch._operator import OperatorHandle

__all__ = ["tell_changed"]


def tell_changed(listeners: Iterable[tuple[Any, object]], op: OperatorHandle) -> None:
    """Call ``on_operator_changed(op)`` on every listener that has it."""
    for _, listener in listeners:
        hook = getattr(listener, "on_operator_changed", None)
        if hook is None:
            continue
        try:
            hook(op)
        except Exception as error:  # the kernel is registered: report, never unwind
            warnings.warn(
                f"{op.name}: listener {listener!r} failed on a kernel change: {error!r}. "
                "The kernel is registered in customop, but what the listener mirrors may be "
                "stale. Fix the listener, or remove it.",
                RuntimeWarning,
                stacklevel=2,
            )

"""Change news: every listener hears of each kernel or extra pushed on or popped
off an operator (adapters that mirror an op in another system, such as
``customop.torch``, keep up with it this way).

``on_operator_changed`` runs under the registration lock, after the op's table
has been rebuilt, so the listener reads the new kernels. A failing listener
cannot undo the registration that is already made: its error becomes a warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from customop.dispatch._operator import OperatorHandle

if TYPE_CHECKING:
    from customop.dispatch._registry import OperatorListener

__all__ = ["tell_changed"]


def tell_changed(listeners: Iterable[tuple[Any, OperatorListener]], op: OperatorHandle) -> None:
    """Call ``on_operator_changed(op)`` on every listener."""
    for _, listener in listeners:
        try:
            listener.on_operator_changed(op)
        except Exception as error:  # the kernel is registered: report, never unwind
            warnings.warn(
                f"{op.name}: listener {listener!r} failed on a kernel change: {error!r}. "
                "The kernel is registered in customop, but what the listener mirrors may be "
                "stale. Fix the listener, or remove it.",
                RuntimeWarning,
                stacklevel=2,
            )

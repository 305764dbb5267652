"""The process-wide dispatcher that ``customop.Library`` and ``@custom_op`` use by default.

Tests and embedders make their own `Dispatcher` and pass it explicitly.
"""

from __future__ import annotations

from typing import Final

from customop.dispatch._dispatcher import Dispatcher

__all__ = ["dispatcher"]

#: The process-wide dispatcher.
dispatcher: Final = Dispatcher()

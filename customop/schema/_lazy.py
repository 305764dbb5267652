"""Names a package exports but loads on first use (PEP 562 module ``__getattr__``).

Several packages keep pydantic models or rarely used machinery out of
``import customop`` (issue #12); each one's ``__getattr__`` is one call here.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

__all__ = ["load_lazily"]


def load_lazily(module: str, name: str, names: frozenset[str], source: str) -> Any:
    """``module.name`` loaded from ``source`` on first use, then kept in ``module``.

    Args:
        module: the package asked for the attribute (its ``__name__``).
        name: the attribute asked for.
        names: the attributes ``module`` loads lazily.
        source: the module that defines them.

    Returns:
        The attribute, now also set on ``module`` so later reads skip this.

    Raises:
        AttributeError: ``name`` is not one of ``names``.
    """
    if name not in names:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(source), name)
    setattr(sys.modules[module], name, value)
    return value

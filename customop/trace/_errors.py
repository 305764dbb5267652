"""Raising `GraphError` (defined in ``customop.exceptions``, re-exported by ``customop.trace``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

from customop.exceptions import GraphError, UnknownOperatorError
from customop.schema import close_matches

__all__ = ["GraphError", "fail", "unknown_ops_error"]


def fail(message: str) -> NoReturn:
    raise GraphError(message)


def unknown_ops_error(
    api: str, missing: dict[str, str], known: Iterable[str]
) -> UnknownOperatorError:
    """The error for targets (op name -> first node using it) the dispatcher lacks."""
    choices = list(known)
    parts = []
    for op, node in missing.items():
        # A shared "namespace::" prefix makes any two ops of a namespace look alike at
        # difflib's default cutoff (0.6); 0.8 keeps typos and drops mere neighbours.
        close = close_matches(op, choices, n=3, cutoff=0.8)
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        parts.append(f"{op!r} (node {node!r}){hint}")
    what = "operator " if len(parts) == 1 else "operators "
    verb = "is" if len(parts) == 1 else "are"
    return UnknownOperatorError(
        f"{api}: {what}{', '.join(parts)} {verb} not defined in the dispatcher. A graph "
        "stores each op by its qualified name and looks it up again to run. Define the "
        "op first (import the module that registers it), or pass the dispatcher that has "
        "it as dispatcher=.",
        op=next(iter(missing)),
    )

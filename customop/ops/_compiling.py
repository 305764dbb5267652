"""A clear error when ``torch.compile`` meets a customop op that is not a torch op.

Dynamo traces only torch ops. A customop op becomes one with
``customop.torch.register(op)``; before that, Dynamo would fail deep inside
customop's call machinery ("does not know how to enter a RegistryLock
context manager"). The first call of each call object (and every call of
the generic path) asks `refuse_under_dynamo` first: a ``sys.modules``
lookup, so ``import customop`` still never imports torch.
"""

from __future__ import annotations

import sys

from customop.exceptions import RegistrationError

__all__ = ["refuse_under_dynamo"]


def refuse_under_dynamo(name: str) -> None:
    """Raise when called while Dynamo traces (the call of op ``name`` is not a torch op)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.compiler.is_dynamo_compiling():
        return
    namespace = name.split("::", maxsplit=1)[0]
    what = f"an op of namespace {namespace!r}" if name.endswith("::*") else repr(name)
    raise RegistrationError(
        f"torch.compile: the customop op {what} is called in compiled code, but it is "
        "not registered in torch. Dynamo traces torch ops only. Call "
        f"customop.torch.register(op) (or customop.torch.register({namespace!r}) for its "
        "namespace) before compiling."
    )

"""Writes a schema declares, told to the arrays that count them: torch's version counter.

torch bumps the version counter of each tensor a mutating op writes
(``Tensor(a!)``), so autograd can tell a saved tensor was changed. A kernel of
a mutating customop op gets the same on torch tensors whether or not the op
is registered in torch: `count_writes` wraps it. Other arrays have no
counter, and pay one ``sys.modules`` lookup per call of a mutating op.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from customop.ops._device_args import canonical_devices
from customop.ops._dtype_args import canonical_dtypes
from customop.schema import FunctionSchema

__all__ = ["count_writes", "prepare_kernel"]


def _bump(torch: Any, value: Any) -> None:
    if isinstance(value, torch.Tensor):
        torch._C._increment_version((value,))
    elif isinstance(value, list | tuple):
        found = tuple(t for t in value if isinstance(t, torch.Tensor))
        if found:
            torch._C._increment_version(found)


def count_writes(fn: Callable[..., Any], schema: FunctionSchema) -> Callable[..., Any]:
    """``fn``, bumping the version counter of each torch tensor it writes (``fn`` itself
    for a schema that writes nothing)."""
    written = tuple((i, a.name) for i, a in enumerate(schema.arguments) if a.is_write)
    if not written:
        return fn

    def kernel(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        torch = sys.modules.get("torch")  # a torch tensor exists only once torch is imported
        if torch is not None:
            for index, name in written:
                _bump(torch, args[index] if index < len(args) else kwargs.get(name))
        return result

    functools.update_wrapper(kernel, fn)  # dumps and errors name the user's function
    return kernel


def prepare_kernel(fn: Callable[..., Any], schema: FunctionSchema) -> Callable[..., Any]:
    """A kernel as customop calls it: ``ScalarType`` and ``Device`` arguments in the
    kinds its parameters are annotated with, and the writes it makes counted."""
    return count_writes(canonical_devices(canonical_dtypes(fn, schema), schema), schema)

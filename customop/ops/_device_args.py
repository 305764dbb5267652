"""``Device`` arguments in the kind a kernel's parameter is annotated with.

customop reads a ``Device`` argument in any spelling (``"cpu"``, ``"cuda:0"``,
a customop `Device`, a ``torch.device``) and fills a ``Device`` default from
the schema's text (``"cpu:0"``). A kernel whose parameter is annotated
``torch.device`` gets a ``torch.device``, as torch's kernels do; other
kernels get the value as given.
"""

from __future__ import annotations

import functools
import inspect
import sys
import typing
from collections.abc import Callable
from typing import Any

from customop.schema import FunctionSchema

__all__ = ["canonical_devices"]


def _is_torch_device(annotation: object) -> bool:
    # Read by name: the torch module is needed only once such a kernel is called.
    return (
        isinstance(annotation, type)
        and annotation.__name__ == "device"
        and annotation.__module__.partition(".")[0] == "torch"
    )


def _torch_device_parameters(fn: Callable[..., Any], names: list[str]) -> list[str]:
    try:
        hints = typing.get_type_hints(inspect.unwrap(fn))
    except Exception:  # unresolvable hints (a missing import): nothing to convert
        return []
    return [name for name in names if _is_torch_device(hints.get(name))]


def canonical_devices(fn: Callable[..., Any], schema: FunctionSchema) -> Callable[..., Any]:
    """``fn`` receiving its ``torch.device``-annotated ``Device`` arguments as torch.device
    (``fn`` itself when it has none)."""
    arguments = schema.arguments
    devices = [a.name for a in arguments if str(a.type).removesuffix("?") == "Device"]
    wanted = set(_torch_device_parameters(fn, devices)) if devices else set()
    if not wanted:
        return fn
    slots = tuple((i, a.name) for i, a in enumerate(arguments) if a.name in wanted)

    def convert(value: Any) -> Any:
        torch = sys.modules["torch"]
        return (
            value if value is None or isinstance(value, torch.device) else torch.device(str(value))
        )

    def kernel(*args: Any, **kwargs: Any) -> Any:
        args = list(args)  # type: ignore[assignment]
        for index, name in slots:
            if index < len(args):
                args[index] = convert(args[index])  # type: ignore[index]
            elif name in kwargs:
                kwargs[name] = convert(kwargs[name])
        return fn(*args, **kwargs)

    functools.update_wrapper(kernel, fn)  # dumps and errors name the user's function
    return kernel

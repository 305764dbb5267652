"""Tensor subclasses the torch tests share."""

from __future__ import annotations

from typing import Any, ClassVar

import torch


class FunctionTensor(torch.Tensor):
    """A subclass with its own __torch_function__: it records every torch call it sees
    (clear ``seen`` before use)."""

    seen: ClassVar[list[str]] = []

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        cls.seen.append(str(func))
        return super().__torch_function__(func, types, args, kwargs or {})

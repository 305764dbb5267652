"""Detecting mutation and aliasing of array arguments (for debug mode and opcheck).

These checks copy every input, so they are far too costly for every call;
torch runs them on every call, customop only in `debug_checks` and `opcheck`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["arrays_in", "as_numpy", "changed", "shares_memory", "snapshot"]


def as_numpy(value: Any) -> np.ndarray[Any, Any] | None:
    """A numpy view of an array value, or None when it has no host data (fakes, GPU)."""
    import numpy as np  # noqa: PLC0415 - debug-only path; keep `import customop` light

    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dask_graph__"):
        return None  # a lazy array: np.asarray would compute its whole graph
    if getattr(value, "requires_grad", False) is True:
        value = value.detach()  # a torch tensor that requires grad: the same memory, readable
    if hasattr(value, "__array_interface__") or hasattr(value, "__array__"):
        try:
            return np.asarray(value)
        except (TypeError, ValueError, RuntimeError):
            widen = getattr(value, "float", None)  # a bfloat16 torch tensor: numpy has none
            if not callable(widen) or isinstance(value, type):
                return None
            try:
                return np.asarray(widen())
            except (TypeError, ValueError, RuntimeError, AttributeError):
                return None
    return None


def arrays_in(value: Any) -> Iterator[Any]:
    """The arrays in an argument or result: itself, or the items of a list/tuple/dict."""
    if isinstance(value, list | tuple):
        for item in value:
            yield from arrays_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from arrays_in(item)
    elif as_numpy(value) is not None:
        yield value


def snapshot(value: Any) -> list[np.ndarray[Any, Any]]:
    """Copies of the data of every array in ``value``."""
    copies = []
    for array in arrays_in(value):
        data = as_numpy(array)
        if data is not None:
            copies.append(data.copy())
    return copies


def changed(before: list[np.ndarray[Any, Any]], value: Any) -> bool:
    """Whether any array in ``value`` differs from its ``snapshot`` (NaN equals NaN)."""
    after = [as_numpy(array) for array in arrays_in(value)]
    if len(after) != len(before):
        return True
    for old, new in zip(before, after, strict=True):
        if new is None or old.shape != new.shape:
            return True
        if not _equal(old, new):
            return True
    return False


def _equal(old: np.ndarray[Any, Any], new: np.ndarray[Any, Any]) -> bool:
    import numpy as np  # noqa: PLC0415 - see as_numpy

    return bool(np.array_equal(old, new, equal_nan=old.dtype.kind in "fc"))


def shares_memory(a: Any, b: Any) -> bool:
    """Whether two arrays are the same object or overlap in memory."""
    if a is b:
        return True
    left, right = as_numpy(a), as_numpy(b)
    if left is None or right is None:
        return False
    import numpy as np  # noqa: PLC0415 - see as_numpy

    return bool(np.shares_memory(left, right))

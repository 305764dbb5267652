"""Constants in a graph's argument structure.

Plain values (None, bool, int, float, complex, str) sit in the structure as
they are. Values that need a tag to survive JSON, or that are not data at all,
become a `Constant`:

* ``DTYPE``: a dtype object (``np.float32``, ``torch.float32``), by name;
* ``DEVICE``: a device object (not a plain string), by its text;
* ``SYM``: a symbolic size (``SymInt``), by its text; evaluated from the input
  sizes when the graph runs;
* ``OPAQUE``: anything else, kept live; printable, runnable, not serialisable.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from typing import Final, final

from customop.ops import BASE_CHECKS
from customop.trace._meta import TensorMeta, dtype_name, is_scalar

__all__ = ["CONSTANT_TYPES", "INLINE_TYPES", "Constant", "ConstantKind", "constant_of"]

#: Types stored as they are: JSON (with tags for complex and non-finite floats) keeps them.
INLINE_TYPES: Final = frozenset({type(None), bool, int, float, complex, str})

# The library's own tests of what a ScalarType / Device argument accepts.
_is_dtype: Final = BASE_CHECKS["ScalarType"]
_is_device: Final = BASE_CHECKS["Device"]


class ConstantKind(enum.Enum):
    """How a tagged constant is kept, printed and serialised."""

    DTYPE = "dtype"
    DEVICE = "device"
    SYM = "sym"
    OPAQUE = "opaque"


@final
class Constant:
    """A tagged constant: ``kind``, its ``text`` (what prints and serialises) and the
    live ``value`` (None after loading from JSON, where only the text survives)."""

    __slots__ = ("kind", "text", "value")

    kind: ConstantKind
    text: str
    value: object

    def __init__(self, kind: ConstantKind, text: str, value: object = None) -> None:
        self.kind = kind
        self.text = text
        self.value = value

    @classmethod
    def dtype(cls, dtype: object) -> Constant:
        """A dtype: an object such as ``np.float32``, or a canonical name.

        Args:
            dtype: the dtype object or name.

        Returns:
            The constant.
        """
        return cls(ConstantKind.DTYPE, dtype_name(dtype), None if type(dtype) is str else dtype)

    @classmethod
    def device(cls, device: object) -> Constant:
        """A constant holding a device.

        Args:
            device: a device object or its string spelling (``"cpu"``, ``"cuda:0"``).

        Returns:
            The constant, printed as its string spelling.
        """
        return cls(ConstantKind.DEVICE, str(device), None if type(device) is str else device)

    @classmethod
    def sym(cls, size: object) -> Constant:
        """A symbolic size: a ``SymInt`` (kept live), or its text (``"2*s0 + 1"``).

        Args:
            size: a `SymInt`, or its text.

        Returns:
            The constant.
        """
        return cls(ConstantKind.SYM, str(size), None if type(size) is str else size)

    def code(self) -> str:
        """How the constant prints in a graph's code.

        Returns:
            The constant's code text.
        """
        kind = self.kind
        if kind is ConstantKind.DTYPE:
            return f"dtype({self.text!r})"
        if kind is ConstantKind.DEVICE:
            return f"device({self.text!r})"
        return self.text

    def live(self) -> object:
        """The value to pass to a kernel, for every kind but ``SYM`` (evaluated at run).

        Returns:
            The value.
        """
        if self.value is not None or self.kind is ConstantKind.OPAQUE:
            return self.value
        if self.kind is ConstantKind.DTYPE:
            return _numpy_dtype(self.text)
        return self.text

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Constant):
            return NotImplemented
        if self.kind is ConstantKind.OPAQUE:
            return other.kind is ConstantKind.OPAQUE and self.value is other.value
        return (self.kind, self.text) == (other.kind, other.text)

    def __hash__(self) -> int:
        return hash((self.kind, self.text))

    def __repr__(self) -> str:
        return f"Constant({self.kind.name}, {self.text!r})"


def _numpy_dtype(name: str) -> object:
    # NOTE: once customop.tensor has its dtype model, a loaded dtype constant should
    # become that model's dtype; until then numpy's, or the bare name numpy lacks.
    import numpy as np  # noqa: PLC0415 - loading a graph that holds a dtype constant

    try:
        return np.dtype(name)
    except TypeError:
        return name


def _opaque(value: object) -> Constant:
    if hasattr(value, "shape") and hasattr(value, "dtype") and not is_scalar(value):
        text = f"<{type(value).__name__} {TensorMeta.from_value(value)}>"
    else:
        text = f"<{type(value).__name__}>"
    return Constant(ConstantKind.OPAQUE, text, value)


#: Types with a fixed constant kind, looked up by ``type(value)`` before the duck
#: tests below. NOTE for the tracer: register ``SymInt`` here as ``ConstantKind.SYM``.
CONSTANT_TYPES: dict[type, ConstantKind] = {}

_MAKERS: Final[dict[ConstantKind, Callable[[object], Constant]]] = {
    ConstantKind.DTYPE: Constant.dtype,
    ConstantKind.DEVICE: Constant.device,
    ConstantKind.SYM: Constant.sym,
    ConstantKind.OPAQUE: _opaque,
}


def constant_of(value: object) -> Constant:
    """The tagged constant for a value that is neither a plain value, a node nor a container."""
    kind = CONSTANT_TYPES.get(type(value))
    if kind is None:
        if _is_dtype(value):
            kind = ConstantKind.DTYPE
        elif _is_device(value):  # never a str here: strings are plain values
            kind = ConstantKind.DEVICE
        else:
            kind = ConstantKind.OPAQUE
    return _MAKERS[kind](value)


def float_code(value: float) -> str:
    """A float as Python code: ``float('inf')`` where repr would give a bare ``inf``."""
    return repr(value) if math.isfinite(value) else f"float({repr(value)!r})"

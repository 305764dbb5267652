"""`TensorMeta`: what a graph knows about a tensor value (shape, dtype, device).

A size is an ``int`` or symbolic. Symbolic sizes (a ``SymInt`` of the fake
tensor layer, or text read back from JSON) are kept twice: as text (``"s0"``,
``"2*s0 + 1"``) in ``shape``, which is what prints and serialises, and as the
live object in ``sizes`` while there is one.
"""

from __future__ import annotations

import contextlib
import numbers
from collections.abc import Sequence
from typing import Any, Final, TypeAlias, final

__all__ = [
    "SHORT_DTYPES",
    "Meta",
    "MetaLike",
    "TensorMeta",
    "dtype_name",
    "format_meta",
    "meta_of",
    "size_entry",
]

#: Canonical dtype name -> the short spelling used in printed graphs (as torch.fx does).
SHORT_DTYPES: Final[dict[str, str]] = {
    "bool": "b8",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "complex64": "c64",
    "complex128": "c128",
}
_LONG_DTYPES: Final = {short: long for long, short in SHORT_DTYPES.items()}

# dtype object -> canonical name. A trace meets a handful of dtypes many times over.
_dtype_names: dict[object, str] = {}


def dtype_name(dtype: object) -> str:
    """The canonical name of a dtype: ``"float32"`` for ``np.float32``,
    ``np.dtype("f4")``, ``torch.float32`` or any object with a ``.name``."""
    if type(dtype) is str:
        return _LONG_DTYPES.get(dtype, dtype)
    try:
        return _dtype_names[dtype]
    except (KeyError, TypeError):  # TypeError: an unhashable dtype object
        pass
    name = _compute_dtype_name(dtype)
    with contextlib.suppress(TypeError):
        _dtype_names[dtype] = name
    return name


def _compute_dtype_name(dtype: object) -> str:
    if isinstance(dtype, type) and dtype.__module__ == "numpy":
        import numpy as np  # noqa: PLC0415 - numpy is loaded: a numpy type was passed

        if issubclass(dtype, np.generic):
            return str(np.dtype(dtype).name)
    name = getattr(dtype, "name", None)
    if isinstance(name, str):
        return name
    # torch.float32 prints as "torch.float32": the name is the last dotted part.
    return str(dtype).rpartition(".")[2]


def size_entry(size: object) -> int | str:
    """A shape entry as it prints and serialises: an ``int``, or the text of a symbolic size."""
    if type(size) is int:
        return size
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        return int(size)
    text = size if isinstance(size, str) else str(size)
    # A symbolic size that is known to be a constant prints as one: treat it as the int.
    digits = text[1:] if text.startswith("-") else text
    return int(text) if digits.isdecimal() else text


def _entries(sizes: tuple[object, ...]) -> tuple[int | str, ...]:
    for size in sizes:
        if type(size) is not int:
            return tuple([size_entry(s) for s in sizes])
    # All ints, the usual case: share the tuple rather than copy it.
    return sizes  # type: ignore[return-value]


@final
class TensorMeta:
    """The shape, dtype and device of a tensor value in a graph.

    ``shape`` entries are ints or symbolic-size text; ``sizes`` are the live
    entries given (ints, ``SymInt`` objects, or text after loading from JSON).
    ``dtype`` is a canonical name (``"float32"``), ``device`` a device text
    (``"cpu"``, ``"cuda:1"``). Treat instances as immutable.
    """

    __slots__ = ("device", "dtype", "shape", "sizes")

    shape: tuple[int | str, ...]
    sizes: tuple[object, ...]
    dtype: str
    device: str

    def __init__(self, shape: Sequence[object], dtype: object, device: object = "cpu") -> None:
        sizes = shape if type(shape) is tuple else tuple(shape)
        self.sizes = sizes
        self.shape = _entries(sizes)
        self.dtype = dtype_name(dtype)
        self.device = device if type(device) is str else str(device)

    @classmethod
    def from_value(cls, value: Any) -> TensorMeta:
        """The metadata of an array: a numpy array, a `FakeTensor`, or any object with
        ``.shape`` and ``.dtype`` (and ``.device``; ``"cpu"`` when it has none).

        Args:
            value: the array.

        Returns:
            Its metadata.
        """
        try:
            shape, dtype = value.shape, value.dtype
        except AttributeError:
            raise TypeError(
                f"TensorMeta.from_value: expected a tensor, got {type(value).__name__} "
                f"{value!r:.60}. Only arrays (objects with .shape and .dtype) have tensor "
                "metadata. Pass an array, or record None as the metadata of a non-tensor value."
            ) from None
        return cls(shape, dtype, getattr(value, "device", "cpu"))

    @property
    def rank(self) -> int:
        """The number of dimensions, ``len(shape)``."""
        return len(self.shape)

    @property
    def short_dtype(self) -> str:
        """``"f32"`` for ``"float32"``; unknown dtypes keep their name."""
        return SHORT_DTYPES.get(self.dtype, self.dtype)

    def __str__(self) -> str:
        text = f"{self.short_dtype}[{', '.join(map(str, self.shape))}]"
        return text if self.device == "cpu" else f"{text}@{self.device}"

    def __repr__(self) -> str:
        return f"TensorMeta(shape={self.shape!r}, dtype={self.dtype!r}, device={self.device!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorMeta):
            return NotImplemented
        return (self.shape, self.dtype, self.device) == (other.shape, other.dtype, other.device)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.device))


#: What a node knows about its value: one tensor, several outputs (an op
#: returning a tuple or list), or nothing (a non-tensor value).
Meta: TypeAlias = TensorMeta | tuple[TensorMeta | None, ...] | None


#: What the builder accepts as metadata: `Meta`, or a list where `Meta` has a tuple.
MetaLike: TypeAlias = TensorMeta | Sequence[TensorMeta | None] | None


def _is_tensor(value: object) -> bool:
    # numpy scalars have .shape and .dtype too, but the dispatcher does not take them as tensors.
    return hasattr(value, "shape") and hasattr(value, "dtype") and not is_scalar(value)


def is_scalar(value: object) -> bool:
    """numpy scalars have .shape and .dtype too (numbers, and numpy's bool)."""
    return isinstance(value, numbers.Number) or type(value).__name__ in ("bool_", "bool")


def meta_of(value: object) -> Meta:
    """The metadata of an op's result: a `TensorMeta` for a tensor, a tuple of
    them (None for non-tensors) for a tuple or list result, else None.

    Args:
        value: the op's result.

    Returns:
        Its metadata.
    """
    if isinstance(value, tuple | list):
        return tuple([TensorMeta.from_value(v) if _is_tensor(v) else None for v in value])
    return TensorMeta.from_value(value) if _is_tensor(value) else None


def format_meta(meta: Meta) -> str:
    """``f32[s0, 3]``; ``(f32[3], i64[3])`` for several outputs; ``""`` for None."""
    if meta is None:
        return ""
    if isinstance(meta, TensorMeta):
        return str(meta)
    inner = ", ".join("-" if m is None else str(m) for m in meta)
    return f"({inner},)" if len(meta) == 1 else f"({inner})"

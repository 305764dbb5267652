"""customop's dtypes: one object per torch ScalarType, mapped to numpy and torch.

A `dtype` names an element type the way torch does (``float32``, ``int64``,
``bool``) and carries its torch ScalarType code, so a schema default such as
``ScalarType dtype=long`` (stored as the code 4) becomes ``customop.int64``
through `dtype_from_code`. Each dtype is a singleton, so ``is`` compares them.

numpy interop: ``.numpy`` is the matching ``numpy.dtype``; ``.dtype`` returns
the same, which is the attribute numpy reads when it is handed any object as a
dtype, so ``np.empty(3, dtype=customop.float32)`` works and
``np.dtype("float32") == customop.float32`` is true.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeAlias, final

from customop.schema import SCALAR_TYPE_CODES, add_built_in
from customop.symbolic import torch_function_hook

__all__ = [
    "DTYPES",
    "DTypeLike",
    "bfloat16",
    "bool_",
    "complex64",
    "complex128",
    "dtype",
    "dtype_from_code",
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "to_dtype",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]

#: What APIs taking a dtype accept: a customop dtype, a numpy dtype or scalar type,
#: a Python number type, a name (torch's, e.g. ``"long"``), or a ``torch.dtype``.
DTypeLike: TypeAlias = Any

#: Element types numpy has, by torch name (torch's ``bool`` is numpy's ``bool``).
_NUMPY_NAMES: Final = frozenset(
    {"bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
     "float16", "float32", "float64", "complex64", "complex128"}
)  # fmt: skip
if TYPE_CHECKING:
    import numpy as np

#: Python's number types, as numpy reads them (``np.dtype(int)`` is int64).
_PYTHON_TYPES: Final[dict[type, str]] = {bool: "bool", int: "int64", float: "float64",
                                         complex: "complex128"}  # fmt: skip
_FLOATING: Final = frozenset({"float16", "bfloat16", "float32", "float64"})
_COMPLEX: Final = frozenset({"complex32", "complex64", "complex128"})


# NOTE: the class is named ``dtype`` like ``torch.dtype`` and ``numpy.dtype``: the
# library layer recognises dtype arguments of any array library by that name.
@final
class dtype:  # noqa: N801 -- named like torch.dtype / numpy.dtype on purpose (see NOTE)
    """An element type: ``customop.float32``, ``customop.int64``, ``customop.bool_``, ...

    ``name`` is torch's name (``"float32"``, ``"bool"``), ``code`` torch's
    ScalarType code (``float32`` is 6), ``numpy`` the numpy dtype. Get one
    from anything dtype-like with `dtype.from_any`, or from a code with
    `dtype.from_code`. Instances are singletons: compare with ``is`` or ``==``;
    ``==`` also accepts numpy dtypes, numpy scalar types and ``torch.dtype``
    objects (not strings, whose meaning differs between torch and numpy:
    ``"float"`` is float32 in torch, float64 in numpy).
    """

    __slots__ = ("_attr", "_code", "_name", "_numpy")

    _attr: str
    _code: int
    _name: str
    _numpy: np.dtype[Any] | None  # made on first use: numpy is not imported with customop

    def __init__(self) -> None:
        raise TypeError(
            "dtype: dtypes are not constructed. Each element type has one dtype object. "
            "Use customop.float32 and friends, dtype.from_any(value) or dtype.from_code(code)."
        )

    @classmethod
    def _make(cls, name: str, code: int) -> dtype:
        self = object.__new__(cls)
        self._name = name
        self._code = code
        self._attr = "bool_" if name == "bool" else name
        self._numpy = None
        return self

    @property
    def name(self) -> str:
        """torch's name: ``"float32"``, ``"int64"``, ``"bool"``."""
        return self._name

    @property
    def code(self) -> int:
        """torch's ScalarType code, as schema defaults store it (``int64`` is 4)."""
        return self._code

    @property
    def numpy(self) -> np.dtype[Any]:
        """The numpy dtype; a `TypeError` for types numpy lacks (``bfloat16``, ``float8_*``)."""
        if self._numpy is not None:
            return self._numpy
        if self._name not in _NUMPY_NAMES:
            raise TypeError(
                f"dtype.numpy: {self._name} has no numpy dtype. numpy has no such element "
                "type, so numpy arrays cannot hold it. Use a torch tensor for it, or convert "
                "to a type numpy has, such as float32."
            )
        import numpy  # noqa: PLC0415 -- numpy stays off `import customop`'s clock

        self._numpy = numpy.dtype(self._name)
        return self._numpy

    @property
    def dtype(self) -> np.dtype[Any]:
        """Same as `numpy`: the attribute numpy reads to convert any object to a dtype."""
        return self.numpy

    @property
    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating-point type (float16/32/64, bfloat16, float8 variants)."""
        return self._name in _FLOATING or self._name.startswith("float8")

    @property
    def is_complex(self) -> bool:
        """Whether the dtype is a complex type."""
        return self._name in _COMPLEX

    def to_torch(self) -> Any:
        """The ``torch.dtype`` (imports torch, so only call it when torch is wanted).

        Returns:
            The matching ``torch.dtype``.
        """
        import torch  # noqa: PLC0415 -- optional dependency, imported on use

        return getattr(torch, self._name)

    @staticmethod
    def from_code(code: int) -> _DType:
        """The dtype of torch ScalarType ``code`` (``4`` -> ``int64``).

        Args:
            code: the ScalarType number.

        Returns:
            The dtype.
        """
        found = _BY_CODE.get(code) if isinstance(code, int) and not isinstance(code, bool) else None
        if found is None:
            raise ValueError(
                f"dtype.from_code: {code!r} is not a ScalarType code. Codes index torch's "
                f"ScalarType enum, 0 to {max(_BY_CODE)}. Pass an int such as 6 (float32)."
            )
        return found

    @staticmethod
    def from_any(value: DTypeLike) -> _DType:
        """The dtype of ``value``; see `DTypeLike` for what is accepted.

        Strings use torch's names and aliases (``"float32"``, ``"long"``,
        ``"float"`` = float32, ``"double"``, ``"half"``, ``"bool"``).

        Args:
            value: a dtype, a numpy dtype or type, a torch dtype, or a name.

        Returns:
            The dtype.
        """
        return to_dtype(value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, dtype):
            return other is self
        if isinstance(other, str):
            return False  # ambiguous between torch and numpy names: see the class docstring
        found = _convert(other)
        return found is self if found is not None else NotImplemented

    # torch's functions given a customop dtype (torch.empty(n, dtype=x.dtype)) make a
    # fake in a fake impl, else run with torch's dtype.
    __torch_function__ = torch_function_hook

    def __hash__(self) -> int:
        return hash(self._name)

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"customop.{self._attr}"

    def __reduce__(self) -> tuple[Any, tuple[int]]:
        return (dtype_from_code, (self._code,))

    def __copy__(self) -> _DType:
        return self

    def __deepcopy__(self, memo: object) -> _DType:
        return self


# In the class body, `dtype` is the numpy-protocol property; annotations there use this.
_DType: TypeAlias = dtype


def _build() -> tuple[dict[int, dtype], dict[str, dtype]]:
    by_code: dict[int, dtype] = {}
    by_name: dict[str, dtype] = {}
    for name, code in SCALAR_TYPE_CODES.items():
        # The first name of each code is canonical; later ones are aliases ("long").
        if code not in by_code:
            by_code[code] = dtype._make(name, code)
        by_name[name] = by_code[code]
    by_name["bool_"] = by_code[SCALAR_TYPE_CODES["bool"]]
    return by_code, by_name


_BY_CODE, _BY_NAME = _build()

#: Every dtype by name, aliases included (``"long"`` -> ``int64``).
DTYPES: Final[Mapping[str, dtype]] = MappingProxyType(_BY_NAME)

bool_: Final = _BY_NAME["bool"]
uint8: Final = _BY_NAME["uint8"]
int8: Final = _BY_NAME["int8"]
int16: Final = _BY_NAME["int16"]
int32: Final = _BY_NAME["int32"]
int64: Final = _BY_NAME["int64"]
uint16: Final = _BY_NAME["uint16"]
uint32: Final = _BY_NAME["uint32"]
uint64: Final = _BY_NAME["uint64"]
float16: Final = _BY_NAME["float16"]
bfloat16: Final = _BY_NAME["bfloat16"]
float32: Final = _BY_NAME["float32"]
float64: Final = _BY_NAME["float64"]
complex64: Final = _BY_NAME["complex64"]
complex128: Final = _BY_NAME["complex128"]


def dtype_from_code(code: int) -> dtype:
    """The dtype of a torch ScalarType code: what a ``ScalarType`` schema default stores.

    Args:
        code: the ScalarType number.

    Returns:
        The dtype.
    """
    return dtype.from_code(code)


def _is_torch_dtype(value: object) -> bool:
    kind = type(value)
    return kind.__name__ == "dtype" and kind.__module__.partition(".")[0] == "torch"


def _convert(value: object) -> dtype | None:
    """The dtype of a non-str ``value``, or None when it is not dtype-like."""
    if isinstance(value, type) and value in _PYTHON_TYPES:
        return _BY_NAME[_PYTHON_TYPES[value]]
    if _is_torch_dtype(value):
        # str(torch.float32) is 'torch.float32'.
        return _BY_NAME.get(str(value).rpartition(".")[2])
    numpy = sys.modules.get("numpy")  # a numpy dtype or type means numpy is imported
    if numpy is None:
        return None
    if isinstance(value, numpy.dtype):
        return _BY_NAME.get(value.name) if value.name in _NUMPY_NAMES else None
    if isinstance(value, type):
        # numpy scalar types, and other libraries' scalar types that numpy understands.
        try:
            return _convert(numpy.dtype(value))
        except TypeError:
            return None
    return None


def to_dtype(value: DTypeLike, *, api: str = "dtype.from_any") -> dtype:
    """``value`` as a customop `dtype`; a clear error for anything else."""
    if isinstance(value, dtype):
        return value
    if isinstance(value, str):
        found = _BY_NAME.get(value.removeprefix("torch."))
        if found is None:
            _raise_unknown(api, value)
        return found
    found = _convert(value)
    if found is None:
        _raise_unknown(api, value)
    return found


def _raise_unknown(api: str, value: object) -> NoReturn:
    if isinstance(value, str):
        raise ValueError(
            f"{api}: {value!r} is not a dtype name. Names follow torch (ScalarType names and "
            "aliases such as 'long'). Use e.g. 'float32', 'int64', 'bool' or 'long'."
        )
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.dtype):
        raise TypeError(
            f"{api}: numpy dtype {value.name!r} has no customop dtype. customop's element "
            "types are torch's ScalarTypes, and this one is not among them. Convert the array "
            "to a numeric or bool dtype first."
        )
    kind = type(value).__qualname__
    raise TypeError(
        f"{api}: {value!r} ({kind}) is not a dtype customop knows. An element type must "
        "have a torch ScalarType. Pass a customop dtype, a numpy dtype or scalar type, a "
        "torch.dtype, or a name such as 'float32'."
    )


# `kind: customop.dtype = customop.int64` infers as `ScalarType kind=int64`.
add_built_in(dtype, "ScalarType")

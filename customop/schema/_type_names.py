"""Type names users write by habit, and the help they get: shared by the parser and the model."""

from __future__ import annotations

from customop.schema._clip import close_matches

__all__ = [
    "BASE_TYPE_NAMES",
    "CANONICAL_NAMES",
    "WILDCARD",
    "is_identifier",
    "suggest_type_name",
    "type_name_problem",
]

#: Every base type name torch's schema grammar knows (``None`` is read as ``NoneType``).
BASE_TYPE_NAMES: frozenset[str] = frozenset(
    {
        "Tensor", "int", "float", "bool", "str", "complex", "Scalar", "ScalarType",
        "Layout", "MemoryFormat", "Device", "Generator", "Storage", "Stream", "QScheme",
        "Dimname", "SymInt", "SymFloat", "SymBool", "Any", "AnyEnumType", "AnyClassType",
        "NoneType", "ConstQuantizerPtr", "Capsule", "number", "DeviceIndex",
    }
)  # fmt: skip

#: Source spellings that torch's C++ printer shows as another type (torchgen's aliases).
CANONICAL_NAMES: dict[str, str] = {"DeviceIndex": "int"}

WILDCARD = "*"


def is_identifier(text: str) -> bool:
    return text.isidentifier() and text.isascii()


def suggest_type_name(name: str) -> str | None:
    """The known type name closest to ``name``, for "did you mean" help."""
    close = close_matches(name, sorted(BASE_TYPE_NAMES), n=1, cutoff=0.6)
    if not close:
        close = [n for n in BASE_TYPE_NAMES if n.lower() == name.lower()]
    return close[0] if close else None


_HABITS: dict[str, str] = {
    "double": "In a schema, 'float' is already double precision (a C++ double). Use `float`.",
    "int64_t": "In a schema, 'int' is already 64-bit (a C++ int64_t). Use `SymInt` or "
    "`int` (SymInt for a size that may be symbolic).",
    "int32_t": "Schema integers are 'int', always 64-bit. Write 'int'.",
    "long": "Schema integers are 'int', always 64-bit. Write 'int'.",
    "size_t": "Schema integers are 'int', always 64-bit. Write 'int', or 'SymInt' for a size.",
    "integer": "Schema integers are 'int'. Write 'int'.",
    "string": "Schema strings are 'str'. Write 'str'.",
    "boolean": "Schema booleans are 'bool'. Write 'bool'.",
    "dtype": "A dtype is a 'ScalarType' in a schema. Write 'ScalarType'.",
    "list": "A list of T is written 'T[]', like 'int[]'.",
    "List": "A list of T is written 'T[]', like 'int[]'.",
    "Sequence": "A list of T is written 'T[]', like 'int[]'.",
    "optional": "An optional T is written 'T?', like 'Tensor?'.",
    "Optional": "An optional T is written 'T?', like 'Tensor?'.",
    "tuple": "A tuple is written '(A, B)', like '(Tensor, int)'.",
    "Tuple": "A tuple is written '(A, B)', like '(Tensor, int)'.",
    "dict": "A dict is written 'Dict(K, V)', like 'Dict(str, Tensor)'.",
    "Union": "A union is written 'Union(A, B)', like 'Union(int, str)'.",
}
_BY_LOWER = {name.lower(): name for name in BASE_TYPE_NAMES}
_LOWER_TYPE_NAMES = sorted(n for n in BASE_TYPE_NAMES if n[0].islower())
_KNOWN_TYPES = (
    "Schema types are Tensor, int, SymInt, float, bool, str, Scalar, ScalarType, Device, ... "
    "and T?, T[], (A, B), Dict(K, V); see docs/schemas.md."
)


def type_name_problem(name: str) -> str | None:
    """Why ``name`` (not a base type) is no type: a "did you mean" help, or None
    when it is a valid type variable (a lower-case name not mistaken for a type)."""
    habit = _HABITS.get(name)
    if habit is not None:
        return habit
    if name.lower() in _BY_LOWER:
        return f"Type names are case-sensitive. Write {_BY_LOWER[name.lower()]!r}."
    if name[0].islower():
        close = close_matches(name, _LOWER_TYPE_NAMES, n=1, cutoff=0.75)
        return f"Did you mean {close[0]!r}?" if close else None
    meant = suggest_type_name(name)
    return f"Did you mean {meant!r}?" if meant else _KNOWN_TYPES

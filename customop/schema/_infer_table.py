"""The data behind `infer_schema`: which Python annotation is which schema type.

Two tables, both plain data:

* ``RULES``, one row per schema base type: the forms it may take as an
  argument (``""`` is the type itself, ``"?[]"`` a list of optionals, ...) and
  as a return, and how a Python default becomes its `Default`. This is torch's
  ``SUPPORTED_PARAM_TYPES`` with its list/optional flags written out as forms,
  plus the forms customop adds (``Tensor[]?``, ``str[]``, ``SymInt[][]``).
* the annotation registry: Python class (or ``NewType``) -> base type name.
  It starts from `customop.schema._builtin_annotations` (``int``, ``float``,
  ``bool``, ``str``, `Device`, and the tensor layer's ``customop.Tensor``,
  ``Device`` and ``dtype``); users add theirs with ``register_annotation``.
  This module loads on the first inference, not at ``import customop``
  (issue #12). numpy's and torch's classes (``_LAZY``) join on the
  first lookup that misses while that package is imported: an annotation that
  names them means it is. This module imports neither, which keeps numpy off
  ``import customop``'s clock and torch out of the process.

Generic annotations (``list[...]``, ``Optional[...]``, ``Literal[...]``, ...)
are read by `customop.schema._infer_walk`, keyed on ``typing.get_origin``.
"""

from __future__ import annotations

import enum
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType, ModuleType
from typing import Final, final

from customop.exceptions import RegistrationError
from customop.schema._base import build
from customop.schema._builtin_annotations import BUILT_IN, Device
from customop.schema._defaults import SCALAR_TYPE_CODES, Default, format_value

__all__ = [
    "RULES",
    "UNIONS",
    "Choices",
    "Device",
    "TypeRule",
    "add_annotation",
    "lookup_annotation",
]


@final
@dataclass(frozen=True, slots=True)
class Choices:
    """The strings a ``str`` argument inferred from ``Literal[...]`` or an ``Enum`` accepts.

    ``values`` are the schema-level strings, in declaration order. For an
    ``Enum`` they are the members' values when every value is a ``str``, else
    the members' names; ``enum`` is the class, so that `to_python` can hand the
    kernel a member again. For ``Literal[...]``, ``enum`` is None.
    """

    values: tuple[str, ...]
    enum: type[enum.Enum] | None = None

    def to_python(self, text: str) -> object:
        """The value the kernel receives for ``text``: the member for an Enum, else ``text``.

        Raises ``ValueError`` when ``text`` is not one of ``values``.

        Args:
            text: the string the caller passed.

        Returns:
            The Enum member, or ``text``.

        Raises:
            ValueError: ``text`` is not an allowed value.
        """
        if text not in self.values:
            raise ValueError(
                f"Choices: {text!r} is not one of {', '.join(map(repr, self.values))}."
            )
        if self.enum is None:
            return text
        return dict(zip(self.values, self.enum, strict=True))[text]


#: Turns a Python default into the schema `Default`, or None when it does not fit.
#: Arguments: the default, the annotation the base type came from, the choices.
DefaultConverter = Callable[[object, object, Choices | None], Default | None]


@final
@dataclass(frozen=True, slots=True)
class TypeRule:
    """Where a schema base type may appear in an inferred schema, and its defaults."""

    python: str  # how users spell it, for messages ("int" for SymInt)
    params: tuple[str, ...]  # argument forms: what follows the base name, like "?[]"
    returns: tuple[str, ...]  # return forms
    default: DefaultConverter
    expects: str  # what a default must be, for messages


def _make(value: object, spelling: str) -> Default:
    # The converters below produce only values that fit their type.
    return build(Default, {"value": value, "spelling": spelling})


def _no_default(value: object, leaf: object, choices: Choices | None) -> Default | None:
    return None


def _int_default(value: object, leaf: object, choices: Choices | None) -> Default | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return _make(int(value), str(int(value)))
    return None


def _float_default(value: object, leaf: object, choices: Choices | None) -> Default | None:
    # torch's infer_schema prints str(default): `s: float = 1` gives `s=1`, which
    # torch's parser reads as the float 1.0. Keep that spelling, store a float.
    if isinstance(value, int) and not isinstance(value, bool):
        return _make(float(value), str(int(value)))
    if isinstance(value, float):
        return _make(float(value), repr(float(value)))
    return None


def _bool_default(value: object, leaf: object, choices: Choices | None) -> Default | None:
    return _make(value, str(value)) if isinstance(value, bool) else None


def _scalar_default(value: object, leaf: object, choices: Choices | None) -> Default | None:
    if isinstance(value, bool):
        return _make(value, str(value))
    if isinstance(value, float):
        return _float_default(value, leaf, choices)
    return _int_default(value, leaf, choices)


def _choice_text(value: object, choices: Choices | None) -> str | None:
    if choices is not None and choices.enum is not None and isinstance(value, choices.enum):
        # None for a composite Flag member (Perm.R | Perm.W), which is no single choice.
        return dict(zip(choices.enum, choices.values, strict=True)).get(value)
    if not isinstance(value, str):
        return None
    # str.__str__ gives the plain text of a str subclass (a `(str, Enum)` member prints
    # as 'Mode.MEAN' through str()).
    return str.__str__(value)


def _str_default(value: object, leaf: object, choices: Choices | None) -> Default | None:
    text = _choice_text(value, choices)
    if text is None or (choices is not None and text not in choices.values):
        return None
    # format_value escapes quotes, so `'a"b'` prints as "a\"b" and parses back
    # (torch prints "a"b", which its own parser rejects).
    return _make(text, format_value(text))


def _dtype_name(value: object, leaf: object) -> str | None:
    numpy = sys.modules.get("numpy")  # a numpy value means numpy is imported
    if numpy is not None and isinstance(value, numpy.dtype):
        return str(value.name)
    if numpy is not None and isinstance(value, type) and issubclass(value, numpy.generic):
        return str(numpy.dtype(value).name)
    if isinstance(leaf, type) and isinstance(value, leaf):
        # torch.float32 prints as 'torch.float32'; torch's infer_schema drops the prefix.
        return str(value).rpartition(".")[2]
    return None


def _dtype_default(value: object, leaf: object, choices: Choices | None) -> Default | None:
    name = _dtype_name(value, leaf)
    code = SCALAR_TYPE_CODES.get(name) if name is not None else None
    return None if name is None or code is None else _make(code, name)


def _device_default(value: object, leaf: object, choices: Choices | None) -> Default | None:
    if isinstance(value, str) or (isinstance(leaf, type) and isinstance(value, leaf)):
        # torch's infer_schema quotes str(device): torch.device("cpu") gives "cpu".
        text = str.__str__(value) if isinstance(value, str) else str(value)
        return _make(text, format_value(text))
    return None


_NUMBER = ("", "?", "[]", "[]?", "[][]", "[][]?")
_ONE = ("",)

#: One row per schema base type infer_schema produces. Forms beyond torch's own
#: table: Tensor "[]?", str "[]" and "[]?", and the nested "[][]" lists of numbers.
RULES: Final[Mapping[str, TypeRule]] = MappingProxyType(
    {
        "Tensor": TypeRule(
            "Tensor", ("", "?", "[]", "?[]", "[]?"), ("", "[]"), _no_default,
            "None under an Optional annotation (a tensor cannot be a default)",
        ),
        "SymInt": TypeRule("int", _NUMBER, _ONE, _int_default, "an int (not a bool)"),
        "float": TypeRule("float", _NUMBER, _ONE, _float_default, "a float or an int"),
        "bool": TypeRule("bool", _NUMBER, _ONE, _bool_default, "True or False"),
        "str": TypeRule("str", ("", "?", "[]", "[]?"), (), _str_default, "a str"),
        "Scalar": TypeRule(
            "Union[int, float, bool]", ("", "?", "[]"), _ONE, _scalar_default,
            "an int, a float or a bool",
        ),
        "ScalarType": TypeRule(
            "numpy.dtype", ("", "?"), (), _dtype_default,
            "a dtype with a torch ScalarType, such as numpy.dtype('float32')",
        ),
        "Device": TypeRule("Device", ("", "?"), (), _device_default, "a device name such as 'cpu'"),
    }
)  # fmt: skip

#: Unions (without None) that are one schema type. torch.types.Number is this union too.
UNIONS: Final[Mapping[frozenset[object], str]] = MappingProxyType(
    {frozenset({int, float, bool}): "Scalar"}
)

#: Classes of packages this module does not import, by package: attribute -> base type.
_LAZY: Final[Mapping[str, Mapping[str, str]]] = MappingProxyType(
    {
        "numpy": {"ndarray": "Tensor", "dtype": "ScalarType"},
        "torch": {"Tensor": "Tensor", "dtype": "ScalarType", "device": "Device"},
    }
)

# Copy-on-write: writers replace the dict under the lock, readers never lock.
_lock = threading.Lock()
_table: dict[object, str] = dict(BUILT_IN)  # with the upper layers' classes
_loaded: set[str] = set()  # packages of _LAZY whose classes are in the table


def _replace(update: Callable[[dict[object, str]], None]) -> None:
    global _table  # noqa: PLW0603 -- the registry is module state by design, swapped whole
    with _lock:
        table = dict(_table)
        update(table)
        _table = table


def _add_classes(module: ModuleType, names: Mapping[str, str]) -> bool:
    """Add a package's classes to the table; False while the package is still importing."""
    found = {getattr(module, name, None): base for name, base in names.items()}
    if None in found:
        return False

    def add(table: dict[object, str]) -> None:
        table.update({cls: base for cls, base in found.items() if cls not in table})

    _replace(add)
    return True


def _load_lazy() -> None:
    """Add the classes of every package of _LAZY that is imported by now."""
    for package, names in _LAZY.items():
        module = sys.modules.get(package)
        if package not in _loaded and module is not None and _add_classes(module, names):
            _loaded.add(package)


def lookup_annotation(annotation: object) -> str | None:
    """The schema base type name of a class or NewType annotation, or None."""
    try:
        found = _table.get(annotation)
        if found is None and len(_loaded) < len(_LAZY):
            _load_lazy()
            found = _table.get(annotation)
    except TypeError:  # an unhashable annotation object is not in the table
        return None
    return found


def add_annotation(annotation: object, schema_type: str) -> Callable[[], None]:
    """Map ``annotation`` to ``schema_type``; return a function that removes the mapping."""
    if schema_type not in RULES:
        raise RegistrationError(
            f"register_annotation: schema type {schema_type!r} for {annotation!r} is not one "
            "that infer_schema produces. Only these types have inference rules. Use one of "
            f"{', '.join(map(repr, RULES))}."
        )
    lookup_annotation(annotation)  # loads numpy's and torch's classes before the check

    def add(table: dict[object, str]) -> None:
        if annotation in table:
            raise RegistrationError(
                f"register_annotation: {annotation!r} is already registered as "
                f"{table[annotation]!r}. One annotation has one schema type. Call the function "
                "the earlier registration returned to remove it first."
            )
        table[annotation] = schema_type

    _replace(add)
    removed = False

    def undo() -> None:
        nonlocal removed
        if not removed:  # idempotent: a second call must not remove a later registration
            removed = True
            _replace(remove)

    def remove(table: dict[object, str]) -> None:
        table.pop(annotation, None)

    return undo

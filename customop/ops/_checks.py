"""Checking call arguments against schema types, and the TypeError a bad one gets.

The mapping from schema base types to value checks is one table of data;
containers (``T?``, ``T[]``, ``T[N]``, tuples, dicts, unions) compose checks.
Tensor-ness is asked of the dispatcher's array-type registry, so a user array
type registered as a backend is a Tensor here too.
"""

from __future__ import annotations

import collections.abc
import numbers
import reprlib
from collections.abc import Callable, Sequence
from typing import Any, Final, NoReturn

from customop.dispatch import Dispatcher, Extra, OperatorHandle, RegistrationHandle
from customop.schema import (
    BaseType,
    DictType,
    FunctionSchema,
    ListType,
    OptionalType,
    SchemaType,
    TupleType,
    UnionType,
)
from customop.tensor import DTYPES, Device, SymInt

__all__ = [
    "Check",
    "argument_type_error",
    "attach_value_checks",
    "attached_value_checks",
    "checked_values",
    "is_tensor_check",
    "value_check",
]

Check = Callable[[object], bool]

_short = reprlib.Repr()
_short.maxstring = 60
_short.maxother = 60


# NOTE: no numpy import here (it costs ~90 ms of `import customop`): numpy's
# number types register with the `numbers` ABCs, and its bool and dtype
# classes are recognised by module and name.


def _is_numpy_bool(value: object) -> bool:
    kind = type(value)
    return kind.__name__ in ("bool_", "bool") and kind.__module__ == "numpy"


def _is_int(value: object) -> bool:
    if isinstance(value, int):
        return not isinstance(value, bool)
    return isinstance(value, numbers.Integral) and not _is_numpy_bool(value)


def _is_size(value: object) -> bool:
    # A SymInt (a data-dependent size from a fake impl, customop's or torch's) is an
    # int to int and SymInt args.
    return _is_int(value) or isinstance(value, SymInt) or _is_torch(value, "SymInt")


def _is_torch(value: object, name: str) -> bool:
    """Whether ``value`` is a torch ``name`` (read by type name: torch is never imported)."""
    kind = type(value)
    return kind.__name__ == name and kind.__module__.partition(".")[0] == "torch"


def _is_layout(value: object) -> bool:
    return _is_int(value) or _is_torch(value, "layout")  # torch.strided, ...


def _is_memory_format(value: object) -> bool:
    return _is_int(value) or _is_torch(value, "memory_format")  # torch.channels_last, ...


def _is_float(value: object) -> bool:
    return _is_int(value) or (isinstance(value, float | numbers.Real) and not _is_bool(value))


def _is_bool(value: object) -> bool:
    return isinstance(value, bool) or _is_numpy_bool(value)


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Number) or _is_numpy_bool(value)


def _is_dtype(value: object) -> bool:
    if isinstance(value, str):
        return value.removeprefix("torch.") in DTYPES  # torch's names: "float16", "long"
    kind = type(value)
    if kind.__module__.startswith("numpy") and (
        kind.__name__ == "dtype" or "DType" in kind.__name__
    ):
        return True  # numpy.dtype instances (numpy.dtypes.Float32DType, ...)
    if isinstance(value, type) and value.__module__ == "numpy" and hasattr(value, "itemsize"):
        return True  # numpy scalar types such as numpy.float32
    # torch.dtype and other array libraries' dtype objects, without importing them.
    return kind.__name__ == "dtype" and kind.__module__.partition(".")[0] in _DTYPE_MODULES


_DTYPE_MODULES: Final = frozenset({"torch", "cupy", "jax", "jaxlib", "customop"})


def _is_device(value: object) -> bool:
    """A device: its text (or a ``torch.device``-like's type and index) parses as one."""
    if not isinstance(value, str | Device) and not isinstance(getattr(value, "type", None), str):
        return False
    try:
        Device(value)  # type: ignore[arg-type]  # a str, a Device or a .type object here
    except (TypeError, ValueError):
        return False
    return True


def _device_check(devices: dict[str, int]) -> Check:
    """A Device of the dispatcher whose device types are ``devices`` (renames included)."""

    def is_device(value: object) -> bool:
        if not _is_device(value):
            return False
        kind = value.partition(":")[0] if isinstance(value, str) else getattr(value, "type", "")
        return kind in devices

    is_device.devices = devices  # type: ignore[attr-defined]  # what the error lists
    return is_device


def _anything(value: object) -> bool:
    return True


#: Schema base type name -> the check a value of that type must pass. Names not
#: here (Generator, Storage, Stream, Any, class types, ...) accept any value.
BASE_CHECKS: Final[dict[str, Check]] = {
    "int": _is_size,
    "SymInt": _is_size,
    "DeviceIndex": _is_int,
    "Layout": _is_layout,
    "MemoryFormat": _is_memory_format,
    "QScheme": _is_int,
    "float": _is_float,
    "SymFloat": _is_float,
    "bool": _is_bool,
    "SymBool": _is_bool,
    "str": lambda value: isinstance(value, str),
    "Scalar": _is_number,
    "number": _is_number,
    "complex": _is_number,
    "ScalarType": _is_dtype,
    "Device": _is_device,
    "NoneType": lambda value: value is None,
}


def _sequence_of(elem: Check) -> Check:
    def check(value: object) -> bool:
        return isinstance(value, list | tuple) and all(elem(item) for item in value)

    return check


def value_check(tp: SchemaType, is_tensor: Check, *, int_like: Check = _is_size) -> Check:
    """The check a value of schema type ``tp`` must pass."""
    if isinstance(tp, BaseType):
        if tp.name == "Tensor":
            return is_tensor
        if tp.name in ("int", "SymInt") and int_like is not _is_size:
            return int_like
        devices = getattr(is_tensor, "devices", None)
        if tp.name == "Device" and devices is not None:
            return _device_check(devices)
        return BASE_CHECKS.get(tp.name, _anything)
    if isinstance(tp, OptionalType):
        inner = value_check(tp.elem, is_tensor, int_like=int_like)
        return lambda value: value is None or inner(value)
    if isinstance(tp, ListType):
        elem = value_check(tp.elem, is_tensor, int_like=int_like)
        sequence = _sequence_of(elem)
        if tp.size is not None and isinstance(tp.elem, BaseType) and tp.elem.name != "Tensor":
            # torch accepts a single value for a fixed-size list: `stride=2` for int[2].
            return lambda value: elem(value) or sequence(value)
        return sequence
    if isinstance(tp, TupleType):
        checks = [value_check(t, is_tensor, int_like=int_like) for t in tp.elems]
        return lambda value: (
            isinstance(value, tuple | list)
            and len(value) == len(checks)
            and all(check(item) for check, item in zip(checks, value, strict=True))
        )
    if isinstance(tp, DictType):
        return lambda value: isinstance(value, dict)
    if isinstance(tp, UnionType):
        checks = [value_check(t, is_tensor, int_like=int_like) for t in tp.elems]
        return lambda value: any(check(value) for check in checks)
    return _anything


def _kind(value: object) -> str:
    kind = type(value)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def _hint(tp: SchemaType, check: Check | None, value: object) -> str:
    inner = tp.elem if isinstance(tp, OptionalType) else tp
    optional = " or None" if isinstance(tp, OptionalType) else ""
    devices = getattr(check, "devices", None)
    device_like = isinstance(value, str) or hasattr(value, "type")
    if isinstance(inner, BaseType) and inner.name == "Device" and devices and device_like:
        return (
            "Pass a device of this dispatcher: a device type with an optional index, e.g. "
            f"'cpu' or 'cuda:1' (device types: {', '.join(sorted(devices))}){optional}."
        )
    if isinstance(inner, BaseType) and inner.name == "Tensor":
        return f"Pass an array of a registered type (numpy.ndarray is built in){optional}."
    if isinstance(inner, ListType):
        return f"Pass a list or tuple whose elements are {inner.elem}{optional}."
    if isinstance(inner, BaseType) and inner.name == "ScalarType":
        return f"Pass a dtype, e.g. numpy.float32{optional}."
    return f"Pass a value of type {inner}{optional}."


def argument_type_error(
    schema: FunctionSchema, index: int, value: object, api: str, check: Check | None = None
) -> NoReturn:
    """Raise the TypeError for argument ``index`` of ``schema`` given ``value``.

    A check with a ``choices`` attribute (Literal / Enum parameters) lists them.
    """
    arg = schema.arguments[index]
    where = "keyword-only" if arg.kwarg_only else f"position {index}"
    choices = getattr(check, "choices", None)
    expects = str(arg.type)
    hint = _hint(arg.type, check, value)
    if choices:
        expects = "one of " + ", ".join(repr(c) for c in choices)
        hint = "Pass one of those values."
    raise TypeError(
        f"{api}: argument {arg.name!r} ({where}) expects {expects}, got {_kind(value)} "
        f"{_short.repr(value)}. The schema is {schema}. {hint}"
    )


def checked_values(
    schema: FunctionSchema, values: tuple[Any, ...], checks: Sequence[Check], api: str
) -> tuple[Any, ...]:
    """``values``, each passing its check; raises `argument_type_error` for one that fails.

    A list argument given as another sequence (a ``collections.abc.Sequence``
    such as ``torch.Size`` or a user's class, never a str) becomes a list, as
    torch's dispatcher makes one.
    """
    for index, check in enumerate(checks):
        value = values[index]
        if check(value):
            continue
        if _listish(schema.arguments[index].type) and _other_sequence(value):
            fixed = list(value)
            if check(fixed):
                values = (*values[:index], fixed, *values[index + 1 :])
                continue
        argument_type_error(schema, index, value, api, check)
    return values


def _listish(tp: SchemaType) -> bool:
    inner = tp.elem if isinstance(tp, OptionalType) else tp
    return isinstance(inner, ListType)


def _other_sequence(value: object) -> bool:
    return isinstance(value, collections.abc.Sequence) and not isinstance(
        value, str | bytes | list | tuple
    )


def is_tensor_check(dispatcher: Dispatcher) -> Callable[[object], bool]:
    """Whether a value is a tensor: its type (or a base) is a registered array type."""
    registry = dispatcher._backends
    fast = registry.fast

    def is_tensor(value: object) -> bool:
        return type(value) in fast or registry.lookup(type(value)) is not None

    # The dispatcher's device types (a live view: renames add theirs), for Device checks.
    is_tensor.devices = registry.devices  # type: ignore[attr-defined]
    return is_tensor


#: Checks a definer attached to an op's schema (the Literal and Enum choices of
#: a @custom_op), so that every way of calling the op applies them: the
#: CustomOpDef, ops.<ns>.<name> and its overloads. Kept with the schema object
#: they were made for: a redefinition makes a new schema, which has none until
#: its definer attaches them.
VALUE_CHECKS: Final[Extra[tuple[FunctionSchema, dict[int, Check]]]] = Extra(
    "value checks", owner="customop.ops", describe=lambda found: f"{len(found[1])} checks"
)


def attach_value_checks(
    op: OperatorHandle, schema: FunctionSchema, checks: dict[int, Check], source: str
) -> RegistrationHandle:
    """Make calls of ``op`` with ``schema`` use ``checks`` (by argument index)."""
    return op.dispatcher.register_extra(op, VALUE_CHECKS, (schema, checks), source=source)


def attached_value_checks(op: OperatorHandle, schema: FunctionSchema) -> dict[int, Check] | None:
    """The checks attached to ``op`` for ``schema``, if any."""
    found = op.extra(VALUE_CHECKS)
    return found[1] if found is not None and found[0] is schema else None

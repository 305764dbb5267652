"""An op call as a JAX primitive sees it: array operands, and static parameters for the rest.

A JAX primitive takes a flat list of arrays and keyword parameters that must
be hashable (JAX keys its caches on them). `flatten` splits a call's
arguments, in schema order with defaults filled in, into

* ``operands``: every tensor (``Tensor``, ``Tensor?`` when given, each item
  of ``Tensor[]`` / ``Tensor?[]``), as JAX values (numpy arrays are converted);
* `Statics`: one entry per argument, `TENSOR` where an operand goes (a tuple
  of them for a list, None for an absent optional tensor), else the
  argument's value, frozen (lists become tuples) and hashed. A Python scalar
  is part of the primitive's parameters, so a new value compiles anew, as a
  static argument of ``jax.jit`` does.

`unflatten` rebuilds the call (kernels, fake impls and formulas get the
arguments as customop passes them: lists as lists). Outputs go the same
way: `OutLayout` says, per return, one array (None) or a list of n.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NoReturn, TypeAlias, final

import jax
import jax.numpy as jnp
import numpy as np

from customop.dispatch import OperatorHandle
from customop.ops import python_default
from customop.schema import Argument, BaseType, FunctionSchema, ListType, OptionalType

__all__ = [
    "TENSOR",
    "OutLayout",
    "Statics",
    "bind_values",
    "flatten",
    "flatten_outputs",
    "is_jax",
    "out_layout",
    "rebuild_outputs",
    "refuse",
    "unflatten",
]

#: Per return: None for one array, n for a list of n arrays.
OutLayout: TypeAlias = tuple[int | None, ...]


@final
class _Tensor:
    """Where an operand goes in `Statics` (printed ``T``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "T"

    def __reduce__(self) -> str:
        return "TENSOR"


TENSOR: Final = _Tensor()
_JAX_TYPES: Final = (jax.Array, jax.core.Tracer)


def is_jax(value: object) -> bool:
    """Whether ``value`` is a JAX array or a tracer."""
    return isinstance(value, _JAX_TYPES)


def refuse(error: type[Exception], api: str, what: str, why: str, fix: str) -> NoReturn:
    """Raise ``error`` with customop's four-part message."""
    raise error(f"{api}: {what}. {why}. {fix}.")


@final
class Statics:
    """The hashable, printable parameters of one call: one entry per schema argument."""

    __slots__ = ("_hash", "names", "values")

    def __init__(self, names: tuple[str, ...], values: tuple[Any, ...]) -> None:
        self.names = names
        self.values = values
        self._hash = hash(values)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return type(other) is Statics and self.values == other.values and self.names == other.names

    def __repr__(self) -> str:
        pairs = ", ".join(f"{n}={v!r}" for n, v in zip(self.names, self.values, strict=True))
        return f"({pairs})"


def bind_values(schema: FunctionSchema, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The call's arguments in schema order, defaults filled in."""
    arguments = schema.arguments
    if not kwargs and len(args) == len(arguments):
        return list(args)
    values = list(args[: len(arguments)])
    for arg in arguments[len(values) :]:
        if arg.name in kwargs:
            values.append(kwargs[arg.name])
        elif arg.default is not None:
            values.append(python_default(arg))
        else:
            refuse(
                TypeError,
                str(schema.name),
                f"missing argument {arg.name!r}",
                "Every argument without a default must be given",
                f"Call it as {schema}",
            )
    return values


def _freeze(value: Any, arg: Argument, api: str) -> Any:
    """``value`` with lists as tuples; arrays refused (they cannot be parameters)."""
    if is_jax(value) or isinstance(value, np.ndarray):
        refuse(
            TypeError,
            api,
            f"argument {arg.name!r} ({arg.type}) is an array, {type(value).__name__}",
            "On JAX arrays, non-tensor arguments are static parameters of the primitive: "
            "Python values, fixed when JAX traces",
            "Pass a Python value, or declare the argument a Tensor in the op's schema",
        )
    return tuple(_freeze(item, arg, api) for item in value) if isinstance(value, list) else value


def _unhashable(value: Any) -> Any:
    """The first part of ``value`` that cannot be hashed (``value`` itself, an item), or None."""
    if isinstance(value, tuple):
        return next((found for item in value if (found := _unhashable(item)) is not None), None)
    try:
        hash(value)
    except TypeError:
        return value
    return None


def _frozen(value: Any, arg: Argument, api: str) -> Any:
    frozen = _freeze(value, arg, api)
    culprit = _unhashable(frozen)
    if culprit is not None:
        holds = "is" if culprit is frozen else f"({type(value).__name__}) holds"
        refuse(
            TypeError,
            api,
            f"argument {arg.name!r} {holds} a {type(culprit).__name__}, which cannot be hashed",
            "JAX keys its compile caches on a primitive's parameters, so they must be hashable",
            "Pass ints, floats, bools, strings, dtypes, enums, or lists and tuples of them",
        )
    return frozen


def _operand(value: Any, arg: Argument, api: str) -> Any:
    if is_jax(value):
        return value
    if isinstance(value, np.ndarray | np.generic):
        return jnp.asarray(value)
    refuse(
        TypeError,
        api,
        f"tensor argument {arg.name!r} is a {type(value).__name__}, not an array",
        "A JAX primitive's operands are arrays",
        "Pass a JAX or numpy array",
    )


def flatten(schema: FunctionSchema, values: Sequence[Any], api: str) -> tuple[Statics, list[Any]]:
    """The call as ``(statics, operands)``; see the module docstring."""
    operands: list[Any] = []
    frozen: list[Any] = []
    for arg, value in zip(schema.arguments, values, strict=True):
        kind = arg.tensor_kind
        if kind is None:
            frozen.append(_frozen(value, arg, api))
        elif value is None:
            frozen.append(None)
        elif kind in ("tensor", "optional"):
            operands.append(_operand(value, arg, api))
            frozen.append(TENSOR)
        else:
            items = tuple(None if item is None else TENSOR for item in value)
            operands += [_operand(item, arg, api) for item in value if item is not None]
            frozen.append(items)
    names = tuple(arg.name for arg in schema.arguments)
    return Statics(names, tuple(frozen)), operands


def _thawed(value: Any, tp: Any) -> Any:
    inner = tp.elem if type(tp) is OptionalType else tp
    if isinstance(value, tuple) and type(inner) is ListType:
        return [_thawed(item, inner.elem) for item in value]
    return value


def unflatten(
    schema: FunctionSchema, statics: Statics, operands: Sequence[Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's ``(args, kwargs)`` from `flatten`'s parts: kwarg-only arguments by name."""
    feed = iter(operands)
    values: list[Any] = []
    for arg, slot in zip(schema.arguments, statics.values, strict=True):
        if slot is TENSOR:
            values.append(next(feed))
        elif arg.tensor_kind is not None and isinstance(slot, tuple):
            values.append([None if item is None else next(feed) for item in slot])
        else:
            values.append(_thawed(slot, arg.type))
    npos = len(schema.positional_arguments)
    names = [arg.name for arg in schema.arguments[npos:]]
    return tuple(values[:npos]), dict(zip(names, values[npos:], strict=True))


def _is_tensor(tp: Any) -> bool:
    return type(tp) is BaseType and tp.name == "Tensor"


def out_layout(op: OperatorHandle, result: Any, api: str) -> OutLayout:
    """The output layout of ``result`` (an op's return value), checked against the schema."""
    returns = op.schema.returns
    if not returns:
        return ()
    parts = (result,) if len(returns) == 1 else tuple(result)
    layout: list[int | None] = []
    for ret, part in zip(returns, parts, strict=True):
        if _is_tensor(ret.type):
            layout.append(None)
        elif type(ret.type) is ListType and _is_tensor(ret.type.elem):
            layout.append(len(part))
        else:
            refuse(
                TypeError,
                api,
                f"the op returns {ret.type}",
                "A JAX primitive returns arrays only",
                "Return tensors (Tensor or Tensor[]); pass other results as static arguments",
            )
    return tuple(layout)


def flatten_outputs(layout: OutLayout, result: Any) -> list[Any]:
    """``result`` (a tensor, a tuple, lists) as the primitive's flat list of outputs."""
    if not layout:
        return []
    parts = (result,) if len(layout) == 1 else tuple(result)
    flat: list[Any] = []
    for count, part in zip(layout, parts, strict=True):
        flat += [part] if count is None else list(part)
    return flat


def rebuild_outputs(layout: OutLayout, flat: Sequence[Any]) -> Any:
    """The op's return value from the primitive's outputs: one array, a tuple, lists."""
    if not layout:
        return None
    feed = iter(flat)
    parts = [
        next(feed) if count is None else [next(feed) for _ in range(count)] for count in layout
    ]
    return parts[0] if len(parts) == 1 else tuple(parts)

"""How the transforms use the dispatcher: the formula kernels' recorder and the fallback.

NOTE: how the Autograd keys get activated. Every array carries its backend's
autograd key (``AutogradCPU`` for numpy), and those keys keep their default
fallthrough, so a call outside a transform never stops there and keeps its
generated fast path, whether or not the op has a formula. Formulas live on
``AutogradOther`` (`FORMULA_KEY`), which no array carries; a transform
enters ``include_keys(AutogradOther)`` around the forward it records, as
``trace`` includes ``Tracer``. Inside, an op with a formula runs its
`AutogradFormula` kernel (which calls `record` here through the engine
hook), an op without one runs the dispatcher's AutogradOther fallback, which
`install` makes `record_untracked` in place of the default fallthrough, so a
gradient through such an op is caught before any backward runs, and a
CompositeImplicitAutograd op decomposes into ops that record themselves.
The `Tracked` wrappers ``fn`` gets (see `_tracked`) are array types of the
dispatcher that carry AutogradOther themselves, so a call with one always
reaches these kernels, which unwrap the arguments: no kernel below sees a
wrapper, inside a transform or not. A trace's fakes are not wrapped, so the
tracer above only ever sees its own values.

Both kernels compute below AutogradOther with no tape active (kernels that
call ops are not recorded twice, as torch's AutoDispatchBelowAutograd), then
record the call on every active tape that tracks one of its inputs: nested
transforms share one forward.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, NoReturn

from customop.autograd._tape import (
    ACTIVE,
    Nested,
    Tape,
    bind_inputs,
    differentiable,
    tensor_positions,
)
from customop.autograd._tracked import NUMPY_ARRAY, Tracked, TrackedArray, made_by, unwrap, wrap
from customop.dispatch import DispatchKey, DispatchKeySet, OperatorHandle, below, keyset_from_bits
from customop.exceptions import AutogradError
from customop.tensor import ArrayAdapter, Device, FakeTensor, numpy_empty, torch_tracks

if TYPE_CHECKING:
    from customop.autograd._formula import AutogradFormula

__all__ = [
    "FORMULA_KEY",
    "NUMPY_ADAPTER",
    "NUMPY_KEYS",
    "record",
    "record_untracked",
    "refuse_input",
]

#: The key formulas are registered on and transforms include (see `_formula`).
FORMULA_KEY: Final = DispatchKey.AutogradOther

_SOURCE: Final = "<customop autograd>"
_BELOW_BITS: Final = below(FORMULA_KEY).bits
#: What wrappers dispatch with: numpy's keys plus the formula key; other backends' arrays
#: have their keys computed from the array inside (`_unwrapped`).
NUMPY_KEYS: Final = DispatchKeySet(DispatchKey.CPU, DispatchKey.AutogradCPU, FORMULA_KEY)
# The keys below the formula key, per call key bits (a few distinct sets per program).
_LOWER: dict[int, DispatchKeySet] = {}
NUMPY_ADAPTER: Final = ArrayAdapter(
    TrackedArray, "cpu", lambda _: Device("cpu"), numpy_empty, _SOURCE
)
_set_active = ACTIVE.set
_reset_active = ACTIVE.reset
_get_active = ACTIVE.get


def record(
    formula: AutogradFormula | None,
    op: OperatorHandle,
    keyset: DispatchKeySet,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Compute below the Autograd keys, then record the call on the tapes that track it."""
    tapes = _get_active()
    schema = op.schema
    positions = tensor_positions(schema)
    raw_args, raw_kwargs, generic = _unwrapped(op, positions, args, kwargs, tapes)
    bits = keyset.bits
    if generic:
        bits |= op.dispatch_keyset(*raw_args, **raw_kwargs).bits
    lower = _LOWER.get(bits)
    if lower is None:
        lower = _LOWER[bits] = keyset_from_bits(bits & _BELOW_BITS)
    if not tapes:
        if formula is not None:
            _refuse_torch_grad(op, positions, raw_args, raw_kwargs)
        return op.redispatch(lower, *raw_args, **raw_kwargs)
    token = _set_active(())
    try:
        raw = op.redispatch(lower, *raw_args, **raw_kwargs)
        if len(tapes) == 1:  # the common case, without the loop's tuples
            tape = tapes[0]
            in_vars = tape.tracked(positions, args, kwargs)
            if in_vars is None:
                tape.see(raw)
                return raw
            if type(raw) in NUMPY_ARRAY and differentiable(raw):
                result: Any = TrackedArray(raw)  # the common case, without a call
            else:
                result = _wrapped(raw)
            raw_inputs = bind_inputs(schema, raw_args, raw_kwargs)
            tape.record(op, formula, in_vars, raw_inputs, result=result, raw_result=raw)
            return result
        given = (args, kwargs, raw_args, raw_kwargs)
        return _record_nested(op, formula, tapes, positions, given, raw=raw)
    finally:
        _reset_active(token)


def _record_nested(
    op: OperatorHandle,
    formula: AutogradFormula | None,
    tapes: tuple[Tape, ...],
    positions: tuple[tuple[int, str, bool], ...],
    given: tuple[tuple[Any, ...], dict[str, Any], tuple[Any, ...], dict[str, Any]],
    *,
    raw: Any,
) -> Any:
    """`record` under nested transforms: each tape that tracks an input records the call."""
    args, kwargs, raw_args, raw_kwargs = given
    found = [tape.tracked(positions, args, kwargs) for tape in tapes]
    if all(in_vars is None for in_vars in found):
        for tape in tapes:
            tape.see(raw)
        return raw
    result = _wrapped(raw)
    schema = op.schema
    inputs = bind_inputs(schema, args, kwargs)
    raw_inputs = bind_inputs(schema, raw_args, raw_kwargs)
    for index, (tape, in_vars) in enumerate(zip(tapes, found, strict=True)):
        if in_vars is None:
            tape.see(result)
        else:
            nested = Nested(inputs, result, tapes[:index]) if index else None
            tape.record(
                op, formula, in_vars, raw_inputs, result=result, raw_result=raw, nested=nested
            )
    return result


def _unwrapped(
    op: OperatorHandle,
    positions: tuple[tuple[int, str, bool], ...],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    tapes: tuple[Tape, ...],
) -> tuple[tuple[Any, ...], dict[str, Any], bool]:
    """The call's arguments with the arrays inside wrappers, and whether one was generic.

    Refuses, while a transform records, an input that plain code made from a
    tracked value. A wrapper of another type than numpy's carries only the
    Autograd key, so the caller computes the backend keys from the arrays inside.
    """
    plain: list[Any] | None = None
    generic = False
    count = len(args)
    for index, name, is_list in positions:  # in argument order
        if index >= count:
            break
        value = args[index]
        kind = type(value)
        if kind is TrackedArray or kind is Tracked:
            if value._made is not None and tapes:
                refuse_input(op, name, value, tapes)
            generic = generic or kind is Tracked
            value = value._raw
        elif is_list and value is not None and any(isinstance(v, Tracked) for v in value):
            generic = _check_items(op, name, value, tapes) or generic
            value = [unwrap(item) for item in value]
        else:
            continue
        if count == 1 and not kwargs:
            return (value,), kwargs, generic  # the common case: one tensor, no keywords
        if plain is None:
            plain = list(args)
        plain[index] = value
    raw_args = args if plain is None else tuple(plain)
    raw_kwargs = kwargs
    if kwargs:
        raw_kwargs = {name: _unwrapped_keyword(op, name, v, tapes) for name, v in kwargs.items()}
        generic = generic or any(_generic(value) for value in kwargs.values())
    return raw_args, raw_kwargs, generic


def _check_items(op: OperatorHandle, name: str, items: Any, tapes: tuple[Tape, ...]) -> bool:
    """Refuse a derived item of a ``Tensor[]`` input; whether one is not numpy's wrapper."""
    for position, item in enumerate(items):
        if made_by(item) is not None and tapes:
            refuse_input(op, f"{name}[{position}]", item, tapes)
    return any(type(item) is Tracked for item in items)


def _generic(value: Any) -> bool:
    """Whether ``value`` is, or holds, a wrapper whose backend keys must be computed."""
    if type(value) is list:
        return any(type(item) is Tracked for item in value)
    return type(value) is Tracked


def _unwrapped_keyword(op: OperatorHandle, name: str, value: Any, tapes: tuple[Tape, ...]) -> Any:
    if isinstance(value, Tracked):
        if value._made is not None and tapes:
            refuse_input(op, name, value, tapes)
        return value._raw
    if type(value) is list and any(isinstance(item, Tracked) for item in value):
        _check_items(op, name, value, tapes)
        return [unwrap(item) for item in value]
    return value


def refuse_input(op: OperatorHandle, name: str, value: Any, tapes: tuple[Tape, ...]) -> NoReturn:
    api = tapes[-1].api
    raise AutogradError(
        f"{api}: {str(op.name)!r}: its input {name!r} was made from a value {api} tracks by "
        f"{made_by(value)}, which {api} does not record. Gradients flow only through ops, so "
        "that input would count as a constant and the gradient would be wrong. Make the "
        "computation an op with a formula (register_autograd), or use ops for it."
    )


def _refuse_torch_grad(
    op: OperatorHandle,
    positions: tuple[tuple[int, str, bool], ...],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> None:
    """Refuse a torch tensor torch's autograd tracks, given to an op torch does not know.

    Such a call reaches the formula kernel outside every transform only through
    that tensor's key (`customop.tensor`); torch would differentiate the body
    instead of the formula, so the gradient could be wrong, or silently missing.
    """
    for name, value in _tensor_arguments(positions, args, kwargs):
        if torch_tracks(value):
            raise AutogradError(
                f"{str(op.name)!r}: argument {name!r} is a torch tensor that requires grad "
                f"({_describe(value)}), and the op has an autograd formula, but the op is "
                "not registered in torch. torch would differentiate the body and skip the "
                "formula, so the gradient could be wrong or missing. Register the op in "
                "torch with customop.torch.register(op) (torch then uses the formula), or "
                "call it under torch.no_grad() or with detached tensors if no gradient is "
                "needed."
            )


def _tensor_arguments(
    positions: tuple[tuple[int, str, bool], ...], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[tuple[str, Any]]:
    """``(name, value)`` of every tensor argument given, list items one by one."""
    found: list[tuple[str, Any]] = []
    for index, name, is_list in positions:
        value = args[index] if index < len(args) else kwargs.get(name)
        if is_list and isinstance(value, list | tuple):
            found += [(f"{name}[{i}]", item) for i, item in enumerate(value)]
        else:
            found.append((name, value))
    return found


def _describe(value: Any) -> str:
    shape = tuple(getattr(value, "shape", ()))
    return f"shape {shape}, dtype {getattr(value, 'dtype', '?')}"


def _wrapped(raw: Any) -> Any:
    """An op's result as ``fn`` gets it: each float array in a new wrapper (fakes as they are)."""
    kind = type(raw)
    if kind in NUMPY_ARRAY:  # the common case: one numpy array
        return TrackedArray(raw) if differentiable(raw) else raw
    if kind is tuple or kind is list:
        return kind([_wrapped(item) for item in raw])
    if isinstance(raw, FakeTensor) or not differentiable(raw):
        return raw
    return wrap(unwrap(raw))


def record_untracked(
    op: OperatorHandle, keyset: DispatchKeySet, /, *args: Any, **kwargs: Any
) -> Any:
    """The Autograd fallback: ops without a formula are recorded as nodes backward refuses."""
    return record(None, op, keyset, args, kwargs)

"""``grad``, ``value_and_grad`` and ``vjp``: JAX's transforms over functions of customop ops.

Each call records ``fn``'s forward on a fresh `Tape` (see `_engine` for how
the Autograd keys are activated), then runs the backward. Nested use works:
an outer transform's tape records the inner one's forward and backward ops.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from customop.autograd._backward import backward
from customop.autograd._builtins import Builtins, install
from customop.autograd._engine import FORMULA_KEY
from customop.autograd._tape import ACTIVE, Tape, Var, differentiable
from customop.autograd._tracked import Tracked, made_by, unwrap, unwrap_all, wrap
from customop.dispatch import Dispatcher, include_keys
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import AutogradError
from customop.tensor import FakeTensor

__all__ = ["grad", "value_and_grad", "vjp"]


def _forward(
    tape: Tape, fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]
) -> Any:
    token = ACTIVE.set((*ACTIVE.get(), tape))
    try:
        with include_keys(FORMULA_KEY):
            return fn(*args, **kwargs)
    finally:
        ACTIVE.reset(token)


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, tuple | list):
        return [item for part in value for item in _flatten(part)]
    if isinstance(value, dict):
        return [item for key in value for item in _flatten(value[key])]
    return [value]


def _root(tape: Tape, value: Any, api: str, where: str) -> Var | None:
    """The tracked var of an output; None when it depends on no differentiated argument."""
    var = tape.vars.get(id(value))
    if var is not None:
        return var
    made = made_by(value)
    if made is not None:
        raise AutogradError(
            f"{api}: {where} was made from a value {api} tracks by {made}, which {api} does "
            "not record. Gradients flow only through ops, so the gradient would be wrong. "
            "Make the computation an op with a formula (register_autograd), or return an "
            "op's result."
        )
    if id(value) in tape.seen or not differentiable(value):
        return None
    raise AutogradError(
        f"{api}: {where} ({type(value).__name__}) was not made by a customop op from the "
        "differentiated arguments. Gradients flow only through ops. Make that computation "
        "an op (with a formula), or return an op's result."
    )


def _track(tape: Tape, args: Sequence[Any], nums: Sequence[int], api: str) -> list[Any]:
    """Track the ``nums`` arguments: the arguments ``fn`` gets, wrappers in their place."""
    passed = list(args)
    given: set[int] = set()
    for num in nums:
        value = args[num]
        if not differentiable(value):
            continue
        if id(value) in given:
            raise ValueError(
                f"{api}: differentiated argument {num} is the same array object as an "
                "earlier one. Arrays are tracked by identity, so their gradients would mix. "
                "Pass a copy for one of them."
            )
        given.add(id(value))
        made = made_by(value)
        if made is not None and ACTIVE.get():
            raise AutogradError(
                f"{api}: differentiated argument {num} was made from a value an outer "
                f"transform tracks by {made}, which it does not record, so the outer "
                "gradient would be wrong. Make the computation an op with a formula, or "
                "use ops for it."
            )
        if not isinstance(value, Tracked | FakeTensor) or made is not None:
            value = wrap(unwrap(value))  # an outer transform's own wrapper is tracked as is
        passed[num] = value
    return passed


def _plain(value: Any) -> Any:
    """What a transform returns: plain arrays, unless an outer transform still records."""
    return value if ACTIVE.get() else unwrap_all(value)


def _argnums(argnums: int | Sequence[int], count: int, api: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for num in nums:
        if not isinstance(num, int) or not -count <= num < count:
            raise ValueError(
                f"{api}: argnums {argnums!r} names an argument the call does not have "
                f"({count} positional argument(s)). argnums picks the arguments to "
                "differentiate by position. Pass positions from 0 to "
                f"{count - 1}."
            )
    return tuple(num % count for num in nums)


def _leaf_grads(
    tape: Tape,
    builtins: Builtins,
    leaves: Sequence[Var | None],
    primals: Sequence[Any],
    found: dict[Var, Any],
) -> tuple[Any, ...]:
    grads: list[Any] = []
    for var, primal in zip(leaves, primals, strict=True):
        if var is None:
            grads.append(None)  # not a float array: no gradient (JAX's float0)
        else:
            grad = found.get(var)
            grads.append(builtins.zeros_like(primal) if grad is None else grad)
    return tuple(grads)


def _leaves(tape: Tape, passed: Sequence[Any], nums: Sequence[int]) -> list[Var | None]:
    return [tape.leaf(passed[num], num) if differentiable(passed[num]) else None for num in nums]


def value_and_grad(
    fn: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    has_aux: bool = False,
    dispatcher: Dispatcher | None = None,
) -> Callable[..., Any]:
    """``fn``'s value and its gradient with respect to the ``argnums`` arguments.

    Args:
        fn: A function of customop ops returning a 0-d array (with ``has_aux``,
            a pair ``(loss, aux)``).
        argnums: The position, or positions, of the arguments to differentiate.
        has_aux: Whether ``fn`` returns ``(loss, aux)``; aux is passed through.
        dispatcher: The dispatcher of the ops (default: ``customop.dispatcher``).

    Returns:
        A function returning ``(value, grads)`` (``((value, aux), grads)`` with
        ``has_aux``); ``grads`` is one gradient for an int ``argnums``, else a
        tuple. A non-float argument's gradient is None.
    """
    target = default_dispatcher if dispatcher is None else dispatcher
    api = "grad"

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        builtins = install(target)
        nums = _argnums(argnums, len(args), api)
        tape = Tape(api)
        passed = _track(tape, args, nums, api)
        leaves = _leaves(tape, passed, nums)
        tape.see(passed)  # an argument returned as it is depends on no differentiated one
        result = _forward(tape, fn, passed, kwargs)
        out, aux = _split_aux(result, has_aux, api)
        shape = getattr(out, "shape", None)
        if shape is None or tuple(shape) != ():
            shown = "no shape" if shape is None else f"shape {tuple(shape)}"
            raise TypeError(
                f"{api}: fn must return a 0-d array (a scalar loss), got {type(out).__name__} "
                f"with {shown}. A gradient is taken of one number. Reduce the output with an "
                "op, or use vjp for other outputs."
            )
        var = _root(tape, out, api, "the output")
        found = (
            {} if var is None else backward(tape, builtins, [(var, builtins.ones_like(out))], api)
        )
        grads = _leaf_grads(tape, builtins, leaves, [args[n] for n in nums], found)
        value = (out, aux) if has_aux else out
        return _plain((value, grads[0] if isinstance(argnums, int) else grads))

    return run


def _split_aux(result: Any, has_aux: bool, api: str) -> tuple[Any, Any]:
    if not has_aux:
        return result, None
    if not isinstance(result, tuple | list) or len(result) != 2:
        raise TypeError(
            f"{api}: with has_aux=True, fn must return a pair (output, aux), got "
            f"{type(result).__name__}. The first item is differentiated, the second passed "
            "through. Return a 2-tuple."
        )
    return result[0], result[1]


def grad(
    fn: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    has_aux: bool = False,
    dispatcher: Dispatcher | None = None,
) -> Callable[..., Any]:
    """The gradient of ``fn`` (a 0-d output) with respect to the ``argnums`` arguments.

    Args:
        fn: A function of customop ops returning a 0-d array (with ``has_aux``,
            a pair ``(loss, aux)``).
        argnums: The position, or positions, of the arguments to differentiate.
        has_aux: Whether ``fn`` returns ``(loss, aux)``; the result is then ``(grads, aux)``.
        dispatcher: The dispatcher of the ops (default: ``customop.dispatcher``).

    Returns:
        A function with ``fn``'s parameters returning the gradient (a tuple of
        them for a sequence ``argnums``). Nest it: ``grad(grad(f))``.
    """
    both = value_and_grad(fn, argnums, has_aux=has_aux, dispatcher=dispatcher)

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        value, grads = both(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return run


def vjp(
    fn: Callable[..., Any],
    *primals: Any,
    has_aux: bool = False,
    dispatcher: Dispatcher | None = None,
) -> tuple[Any, ...]:
    """Run ``fn(*primals)`` and return ``(out, vjp_fn)`` (``(out, vjp_fn, aux)`` with has_aux).

    Args:
        fn: A function of customop ops; its output may be an array or a
            tuple, list or dict of them.
        *primals: The arguments, every one differentiated.
        has_aux: Whether ``fn`` returns ``(out, aux)``.
        dispatcher: The dispatcher of the ops (default: ``customop.dispatcher``).

    Returns:
        ``vjp_fn(cotangent)`` takes a cotangent shaped like ``out`` and returns a
        tuple with one cotangent per primal (zeros where ``out`` does not depend
        on it, None for a non-float primal), as in JAX. It may be called again.
    """
    api = "vjp"
    builtins = install(default_dispatcher if dispatcher is None else dispatcher)
    tape = Tape(api)
    nums = range(len(primals))
    passed = _track(tape, primals, nums, api)
    leaves = _leaves(tape, passed, nums)
    out, aux = _split_aux(_forward(tape, fn, passed, {}), has_aux, api)
    outputs = _flatten(out)

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        cotangents = _flatten(cotangent)
        if len(cotangents) != len(outputs):
            raise ValueError(
                f"{api}: the cotangent has {len(cotangents)} array(s), the output "
                f"{len(outputs)}. A cotangent has the output's structure. Pass one array "
                "(or None) per output array."
            )
        roots = []
        for index, (value, ct) in enumerate(zip(outputs, cotangents, strict=True)):
            var = None if ct is None else _root(tape, value, api, f"output {index}")
            if var is not None:
                roots.append((var, ct))
        found = backward(tape, builtins, roots, api) if roots else {}
        grads: tuple[Any, ...] = _plain(_leaf_grads(tape, builtins, leaves, primals, found))
        return grads

    plain_out, plain_aux = _plain((out, aux))
    return (plain_out, vjp_fn, plain_aux) if has_aux else (plain_out, vjp_fn)

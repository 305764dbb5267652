"""Reverse mode: the op's ``register_autograd`` formula as the primitive's VJP.

JAX differentiates a primitive through a JVP rule and the transpose of its
linear part. customop's formula is a VJP (``setup_context`` after the
forward, ``backward`` from output to input gradients), so the JVP rule here
runs the forward and ``setup_context``, and returns as tangents the outputs of
`LINEAR`, a second primitive that is linear in the input tangents and whose
transpose rule runs ``backward`` (``jax.custom_vjp`` works the same way). The
ctx's arrays (saved tensors, and arrays kept as attributes) are `LINEAR`'s
residual operands; everything else on it is static.

``backward`` is written with customop ops; on JAX values they bind the
customop primitive again, so a backward is itself differentiable where its
ops have formulas (``grad(grad(f))``), batched by their rules, and traced by
``jit``. Forward mode (``jax.jvp``, ``jacfwd``) would need the tangent map
itself, which a backward formula does not give: `LINEAR` refuses to run forward.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NoReturn, final

import jax
import jax.numpy as jnp

from customop.autograd import AutogradContext, AutogradFormula
from customop.exceptions import AutogradError
from customop.jax._abstract import abstract, api_of
from customop.jax._api import Primitive, Zero, ad, aval_of, instantiate_zeros, mlir
from customop.jax._layout import (
    TENSOR,
    OutLayout,
    Statics,
    is_jax,
    rebuild_outputs,
    refuse,
    unflatten,
)
from customop.jax._plan import PRIMITIVE, Plan

__all__ = ["LINEAR", "jvp"]

#: The linear part of a customop op's derivative; only ever transposed.
LINEAR: Final = Primitive("customop_linear")
LINEAR.multiple_results = True


@final
class _Backward:
    """What `LINEAR`'s transpose needs besides the residuals: a parameter of `LINEAR`."""

    __slots__ = ("args", "ctx", "layout", "linear", "needs", "out_avals", "plan", "tangent_avals")

    def __init__(
        self,
        plan: Plan,
        args: Statics,
        linear: list[bool],
        out: tuple[list[Any], OutLayout],
        ctx: _Static,
    ) -> None:
        self.plan = plan
        self.args = args
        self.linear = linear  # per operand: it has a tangent (is a LINEAR operand)
        self.out_avals, self.layout = out
        self.tangent_avals = [a.to_tangent_aval() for a in self.out_avals if _inexact(a)]
        self.needs = _needs_input_grad(plan, args, linear)
        self.ctx = ctx

    def __repr__(self) -> str:
        return f"backward of {self.plan.name}"


@final
class _Static:
    """A ctx without its arrays: its pytree structure, the other leaves, the arrays' slots."""

    __slots__ = ("leaves", "slots", "tree")

    def __init__(self, state: dict[str, Any]) -> None:
        leaves, self.tree = jax.tree_util.tree_flatten(state)
        self.slots = [i for i, leaf in enumerate(leaves) if is_jax(leaf)]
        self.leaves = [None if is_jax(leaf) else leaf for leaf in leaves]

    def arrays(self, state: dict[str, Any]) -> list[Any]:
        """The arrays of ``state`` (the ctx this was made from): `LINEAR`'s residuals."""
        leaves = jax.tree_util.tree_leaves(state)
        return [leaves[i] for i in self.slots]

    def rebuilt(self, needs: tuple[bool, ...], residuals: Sequence[Any]) -> AutogradContext:
        """The ctx again, with ``residuals`` in the arrays' places."""
        leaves = list(self.leaves)
        for slot, value in zip(self.slots, residuals, strict=True):
            leaves[slot] = value
        ctx = AutogradContext(needs)
        vars(ctx).update(jax.tree_util.tree_unflatten(self.tree, leaves))
        return ctx


def _inexact(aval: Any) -> bool:
    return bool(jnp.issubdtype(aval.dtype, jnp.inexact))


def _no_formula(plan: Plan) -> NoReturn:
    short = plan.name.split("::", 1)[-1]
    raise AutogradError(
        f"{api_of(plan)}: a gradient flows through {plan.name!r}, which has no autograd "
        "formula. customop gives JAX the op's own backward formula, and this op has none. "
        f"Register one with {short}.register_autograd(backward, setup_context=...) or "
        f"customop.register_autograd({plan.name!r}, ...), or make the op "
        "CompositeImplicitAutograd over ops that have formulas."
    )


def _schema_values(plan: Plan, args: Statics, operands: Sequence[Any]) -> tuple[Any, ...]:
    """The op's arguments in schema order (what ``setup_context`` gets as ``inputs``)."""
    positional, keywords = unflatten(plan.handle.schema, args, operands)
    return (*positional, *keywords.values())


def _needs_input_grad(plan: Plan, args: Statics, linear: list[bool]) -> tuple[bool, ...]:
    """Per input: whether it has a tangent (any item of a tensor list)."""
    feed = iter(linear)
    needs = []
    for arg, slot in zip(plan.handle.schema.arguments, args.values, strict=True):
        if slot is TENSOR:
            needs.append(next(feed))
        elif arg.tensor_kind is not None and isinstance(slot, tuple):
            needs.append(any([next(feed) for item in slot if item is not None]))
        else:
            needs.append(False)
    return tuple(needs)


def _has_tangent(tangent: Any) -> bool:
    # Integer inputs have float0 tangents: nothing flows back to them.
    return type(tangent) is not Zero and getattr(tangent, "dtype", None) != jax.dtypes.float0


def jvp(primals: Sequence[Any], tangents: Sequence[Any], *, op: Plan, args: Statics) -> Any:
    """The primitive's JVP rule: forward, ``setup_context``, and `LINEAR` for the tangents."""
    formula = op.formula
    if formula is None:
        _no_formula(op)
    outs = PRIMITIVE.bind(*primals, op=op, args=args)
    out_avals, layout = abstract(op, args, [aval_of(p) for p in primals])
    linear = [_has_tangent(t) for t in tangents]
    ctx = AutogradContext(_needs_input_grad(op, args, linear))
    if formula.setup_context is not None:
        output = rebuild_outputs(layout, outs)
        formula.setup_context(ctx, _schema_values(op, args, primals), output)
    state = dict(vars(ctx))
    static = _Static(state)
    spec = _Backward(op, args, linear, (out_avals, layout), static)
    residuals = static.arrays(state)
    nonzero = [t for t, lin in zip(tangents, linear, strict=True) if lin]
    found = iter(LINEAR.bind(*residuals, *nonzero, spec=spec) if spec.tangent_avals else ())
    out_tangents = [
        next(found) if _inexact(aval) else Zero(aval.to_tangent_aval()) for aval in out_avals
    ]
    return outs, out_tangents


def _out_grads(spec: _Backward, cts: Sequence[Any]) -> Any:
    """One gradient per return (zeros where none reached it, torch's materialized grads)."""
    feed = iter(cts)
    grads = [
        instantiate_zeros(next(feed)) if _inexact(aval) else jnp.zeros(aval.shape, aval.dtype)
        for aval in spec.out_avals
    ]
    rebuilt = rebuild_outputs(spec.layout, grads)
    return rebuilt if len(spec.layout) > 1 else (rebuilt,)


def _per_input(formula: AutogradFormula, plan: Plan, result: Any) -> tuple[Any, ...]:
    schema = plan.handle.schema
    arguments = schema.arguments
    one_list = len(arguments) == 1 and arguments[0].tensor_kind in ("list", "optional_list")
    if isinstance(result, tuple) or (isinstance(result, list) and not one_list):
        results = tuple(result)
    else:
        results = (result,)
    if len(results) != len(arguments):
        names = ", ".join(arg.name for arg in arguments)
        refuse(
            AutogradError,
            formula.name,
            f"backward returned {len(results)} gradient(s), expected {len(arguments)}: one "
            f"per input ({names})",
            "Gradients are matched to inputs by position",
            "Return a tuple with one entry per input, None for inputs without a gradient",
        )
    return results


def _as_cotangent(plan: Plan, name: str, grad: Any, aval: Any) -> Any:
    value = jnp.asarray(grad)
    if tuple(value.shape) != tuple(aval.shape):
        refuse(
            AutogradError,
            plan.name,
            f"backward returned a gradient with shape {tuple(value.shape)} for input "
            f"{name!r} of shape {tuple(aval.shape)}",
            "A gradient has its input's shape",
            "Reduce or reshape it in the backward (for a broadcast input, sum over the "
            "broadcast dimensions)",
        )
    # As torch does, a gradient takes its input's dtype.
    return value if value.dtype == aval.dtype else value.astype(aval.dtype)


def _flat_grads(plan: Plan, args: Statics, results: tuple[Any, ...]) -> list[tuple[str, Any]]:
    """``(name, gradient)`` per operand, in operand order, from the per-input gradients."""
    flat: list[tuple[str, Any]] = []
    for arg, slot, grad in zip(plan.handle.schema.arguments, args.values, results, strict=True):
        if slot is TENSOR:
            flat.append((arg.name, grad))
        elif arg.tensor_kind is not None and isinstance(slot, tuple):
            if grad is not None and (not isinstance(grad, list | tuple) or len(grad) != len(slot)):
                refuse(
                    AutogradError,
                    plan.name,
                    f"backward returned {type(grad).__name__} for list input {arg.name!r} of "
                    f"{len(slot)} tensors",
                    "A Tensor[] input takes one gradient per tensor",
                    "Return a list of that length (None for entries without one)",
                )
            items = [None] * len(slot) if grad is None else list(grad)
            flat += [
                (f"{arg.name}[{i}]", g)
                for i, (s, g) in enumerate(zip(slot, items, strict=True))
                if s is not None
            ]
        elif grad is not None and arg.tensor_kind is None:
            refuse(
                AutogradError,
                plan.name,
                f"backward returned a gradient for {arg.name!r}, which is not a tensor input",
                "Only tensors have gradients (torch refuses this too)",
                "Return None in its place",
            )
    return flat


def _transpose(cts: Sequence[Any], *operands: Any, spec: _Backward) -> list[Any]:
    """`LINEAR`'s transpose rule: the formula's backward, as input cotangents."""
    plan = spec.plan
    formula = plan.formula
    if formula is None:  # a plan keeps the formula it was made with
        _no_formula(plan)
    count = len(spec.ctx.slots)
    residuals, linear_in = operands[:count], operands[count:]
    ctx = spec.ctx.rebuilt(spec.needs, residuals)
    results = _per_input(formula, plan, formula.backward(ctx, *_out_grads(spec, cts)))
    flat = _flat_grads(plan, spec.args, results)
    wanted = [pair for pair, lin in zip(flat, spec.linear, strict=True) if lin]
    cotangents = [
        None if grad is None else _as_cotangent(plan, name, grad, primal.aval)
        for (name, grad), primal in zip(wanted, linear_in, strict=True)
    ]
    return [None] * count + cotangents


def _forward_refused(*_: Any, spec: _Backward, **__: Any) -> NoReturn:
    raise AutogradError(
        f"{api_of(spec.plan)}: forward-mode differentiation (jax.jvp, jax.jacfwd, "
        "jax.linearize) reached the op. customop gives JAX the op's backward formula "
        "(register_autograd), which maps output gradients to input gradients and says "
        "nothing of the forward tangent map. Use reverse mode: jax.grad, jax.vjp, "
        "jax.value_and_grad or jax.jacrev."
    )


LINEAR.def_abstract_eval(lambda *_, spec: spec.tangent_avals)
LINEAR.def_impl(_forward_refused)
mlir.register_lowering(LINEAR, lambda ctx, *args, spec: _forward_refused(spec=spec))
ad.primitive_transposes[LINEAR] = _transpose

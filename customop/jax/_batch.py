"""vmap: the op's batching rule, or a sequential map over the batch.

An op with a rule (``register_vmap``, read through `customop.jax._plan.vmap_rule`)
gets it called as torch calls it: ``rule(info, in_dims, *args, **kwargs)``
with the batched arguments, ``in_dims`` one entry per positional argument
(an int or None; a list of them for a tensor list), ``info.batch_size`` and
``info.randomness`` (``"error"``: JAX has no implicit randomness to share);
it returns ``(outputs, out_dims)``. It computes with customop ops, so what it
calls is batched no further.

Without a rule (or with a batched keyword-only tensor, which torch's rule
signature cannot describe), the primitive runs once per batch element under
``jax.lax.map``, correct for any op but sequential: each op says so once,
with a warning naming ``register_vmap``.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, Final

import jax
import jax.numpy as jnp
import jaxlib

from customop.jax._abstract import abstract, api_of
from customop.jax._api import ShapedArray
from customop.jax._layout import TENSOR, Statics, flatten_outputs, refuse, unflatten
from customop.jax._plan import PRIMITIVE, Plan

__all__ = ["batch"]


def _in_dims(plan: Plan, args: Statics, dims: Sequence[int | None]) -> tuple[Any, ...] | None:
    """Per positional argument, its batch dim(s); None if a keyword-only tensor is batched."""
    feed = iter(dims)
    found: list[Any] = []
    schema = plan.handle.schema
    npos = len(schema.positional_arguments)
    for index, (arg, slot) in enumerate(zip(schema.arguments, args.values, strict=True)):
        if slot is TENSOR:
            entry: Any = next(feed)
        elif arg.tensor_kind is not None and isinstance(slot, tuple):
            entry = [None if item is None else next(feed) for item in slot]
        else:
            entry = None
        batched = entry is not None and (not isinstance(entry, list) or any(map(_is_int, entry)))
        if index >= npos and batched:
            return None
        if index < npos:
            found.append(entry)
    return tuple(found)


def _is_int(value: object) -> bool:
    return isinstance(value, int)


#: Frames of these packages are not the user's: a warning points past them.
_NOT_USER: Final = tuple(
    os.path.dirname(path) + os.sep
    for path in (os.path.dirname(os.path.abspath(__file__)), jax.__file__, jaxlib.__file__)
    if path
)


def _stacklevel() -> int:
    """The ``stacklevel`` of the nearest frame outside customop, jax and jaxlib."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_NOT_USER):
        frame, level = frame.f_back, level + 1
    return level


def _warn_once(plan: Plan, why: str) -> None:
    owner = plan.owner
    if owner.warned:
        return
    owner.warned = True
    short = plan.name.split("::", 1)[-1]
    warnings.warn(
        f"{api_of(plan)}: jax.vmap runs the op once per batch element (jax.lax.map), "
        f"because {why}. That is correct but sequential. Register a batching rule with "
        f"{short}.register_vmap(rule) to compute the batch in one call.",
        RuntimeWarning,
        stacklevel=_stacklevel(),
    )


def _sequential(
    plan: Plan, args: Statics, values: Sequence[Any], dims: Sequence[int | None]
) -> tuple[list[Any], list[int | None]]:
    mapped = [i for i, dim in enumerate(dims) if dim is not None]
    xs = [jnp.moveaxis(values[i], dims[i], 0) for i in mapped]  # type: ignore[arg-type]

    def one(items: Sequence[Any]) -> Any:
        operands = list(values)
        for i, item in zip(mapped, items, strict=True):
            operands[i] = item
        return PRIMITIVE.bind(*operands, op=plan, args=args)

    outs = jax.lax.map(one, xs)
    return list(outs), [0] * len(outs)


def _unbatched_avals(values: Sequence[Any], dims: Sequence[int | None]) -> list[Any]:
    found = []
    for value, dim in zip(values, dims, strict=True):
        shape = tuple(value.shape)
        if dim is not None:
            shape = shape[:dim] + shape[dim + 1 :]
        found.append(ShapedArray(shape, value.dtype))
    return found


def _with_rule(
    plan: Plan, args: Statics, values: Sequence[Any], dims: Sequence[int | None], in_dims: Any
) -> tuple[list[Any], list[int | None]]:
    rule = plan.rule
    assert rule is not None  # batch() calls this only for plans with a rule
    size = next(v.shape[d] for v, d in zip(values, dims, strict=True) if d is not None)
    positional, keywords = unflatten(plan.handle.schema, args, values)
    result, out_dims = rule.fn(rule.info(size), in_dims, *positional, **keywords)
    avals, layout = abstract(plan, args, _unbatched_avals(values, dims))
    outs = flatten_outputs(layout, result)
    flat_dims = flatten_outputs(layout, out_dims)
    flat_dims = [d if d is None else d % out.ndim for d, out in zip(flat_dims, outs, strict=True)]
    for index, (out, dim, aval) in enumerate(zip(outs, flat_dims, avals, strict=True)):
        shape = tuple(out.shape)
        unbatched = shape if dim is None else shape[:dim] + shape[dim + 1 :]
        if unbatched != tuple(aval.shape) or (dim is not None and shape[dim] != size):
            refuse(
                ValueError,
                api_of(plan),
                f"the vmap rule returned shape {shape} with out_dim {dim} for output {index}, "
                f"which is not a batch of {size} of the op's result, shape {tuple(aval.shape)} "
                "by its fake impl",
                "Each output's out_dim says where its batch dimension is (None: not batched)",
                "Fix the rule's outputs or out_dims",
            )
    return outs, list(flat_dims)


def batch(
    values: Sequence[Any], dims: Sequence[int | None], *, op: Plan, args: Statics
) -> tuple[list[Any], list[int | None]]:
    """The primitive's batching rule (``batching.primitive_batchers``)."""
    if op.rule is None:
        _warn_once(op, "it has no batching rule")
        return _sequential(op, args, values, dims)
    in_dims = _in_dims(op, args, dims)
    if in_dims is None:
        _warn_once(op, "a keyword-only tensor is batched, which a vmap rule cannot be told")
        return _sequential(op, args, values, dims)
    return _with_rule(op, args, values, dims, in_dims)

"""`PRIMITIVE`: the one JAX primitive every customop op binds, with its rules.

One primitive for all ops, the op a parameter (a `Plan`), as JAX's own
``custom_vjp_call`` and ``jax.experimental.hijax`` do: JAX's rule tables
have no way to unregister, so a primitive per op would outlive the op.
A call binds ``PRIMITIVE`` with its tensors as operands and two parameters,
``op`` (the plan) and ``args`` (the `Statics`); a jaxpr shows it as
``customop[args=x=T, eps=1e-05 op=demo::layer_norm]``.

Rules: abstract evaluation from the fake impl (`_abstract`), lowering to the
``"jax"`` kernel or a host callback (`_lower`), the formula as VJP
(`_grad`), the batching rule or a sequential map (`_batch`). Called
eagerly on arrays, the primitive runs through ``jax.jit`` of itself, so the
same op, avals and static arguments reuse one compiled executable (under
``jax.disable_jit()``, the kernel runs as it is, uncompiled).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax

from customop.jax._abstract import abstract
from customop.jax._api import ad, batching, mlir
from customop.jax._batch import batch
from customop.jax._grad import jvp
from customop.jax._layout import Statics
from customop.jax._lower import lowering, run_uncompiled
from customop.jax._plan import PRIMITIVE, Plan

__all__ = ["PRIMITIVE", "compiled_call"]


@partial(jax.jit, static_argnames=("op", "args"))
def compiled_call(*operands: Any, op: Plan, args: Statics) -> Any:
    """The primitive under ``jax.jit``: one executable per plan, statics and avals."""
    return PRIMITIVE.bind(*operands, op=op, args=args)


def _eager(*operands: Any, op: Plan, args: Statics) -> Any:
    """An eager call: JAX's compile cache, keyed on the plan, statics and avals."""
    if jax.config.jax_disable_jit:  # jit would call the primitive, which would call jit...
        return run_uncompiled(op, args, operands)
    return compiled_call(*operands, op=op, args=args)


def _abstract_eval(*avals: Any, op: Plan, args: Statics) -> list[Any]:
    return abstract(op, args, avals)[0]


PRIMITIVE.def_impl(_eager)
PRIMITIVE.def_abstract_eval(_abstract_eval)
mlir.register_lowering(PRIMITIVE, lowering)
ad.primitive_jvps[PRIMITIVE] = jvp
batching.primitive_batchers[PRIMITIVE] = batch

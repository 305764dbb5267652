"""`ServedOp`: one op on JAX arrays, the kernel that binds the primitive for it.

The kernel sits on the ``"jax"`` backend's autograd key (see `_install`)
and, for each call with JAX arrays or tracers:

1. hands calls that are not the primitive's down the table: ops that
   decompose (CompositeImplicitAutograd) run their ops, each its own
   primitive; calls with a `FakeTensor` among the arguments run the fake impl;
2. refuses ops that write to an argument: JAX arrays are immutable;
3. splits the arguments into operands and static parameters (`_layout`) and
   binds `PRIMITIVE` with the op's current `Plan` (on concrete arrays, calls
   its compiled form directly: what binding it would run).

Its name, which dumps show, says what runs for the op now, e.g.
``jax_primitive[CPU kernel through jax.pure_callback (host only)]``.
"""

from __future__ import annotations

from typing import Any, Final

from customop.dispatch import DispatchKey, DispatchKeySet, OperatorHandle
from customop.jax._abstract import abstract, api_of
from customop.jax._api import ArrayImpl, aval_of
from customop.jax._layout import bind_values, flatten, rebuild_outputs, refuse
from customop.jax._plan import JAX_KEY, PRIMITIVE, Plan, describe_kind, kernel_kind
from customop.jax._primitive import compiled_call

__all__ = ["SERVED_KEY", "ServedOp"]

#: The key whose kernel binds the primitive: the "jax" backend's autograd key.
SERVED_KEY: Final = JAX_KEY.autograd_key
_SERVED: Final = DispatchKeySet(DispatchKey.AutogradPrivateUse2)
_FAKE: Final = DispatchKey.Fake
_SHORT: Final = {
    "jax": "'jax' kernel, inline",
    "callback": "CPU kernel through jax.pure_callback (host only)",
    "decompose": "decomposes",
    "missing": "no kernel",
}


class ServedOp:
    """The boxed kernel of one op on the jax autograd key, and the op's current plan."""

    __slots__ = ("_plan", "handle", "warned")

    def __init__(self, handle: OperatorHandle) -> None:
        self.handle = handle
        self._plan: Plan | None = None
        #: Whether the op already warned that vmap maps it sequentially (once per op).
        self.warned = False

    @property
    def __name__(self) -> str:
        return f"jax_primitive[{_SHORT[kernel_kind(self.handle)]}]"

    def plan(self) -> Plan:
        """The op's plan as its registrations stand (made again after each change)."""
        plan = self._plan
        if plan is None:
            plan = self._plan = Plan(self.handle, self)
        return plan

    def changed(self) -> None:
        """A kernel, fake, formula or rule of the op came or went: plan again on next call."""
        self._plan = None

    def describe(self) -> str:
        """What a call on JAX arrays runs, in a sentence."""
        plan = self.plan()
        formula = "its autograd formula" if plan.formula else "no formula (grad raises)"
        rule = "its vmap rule" if plan.rule else "a sequential map"
        return (
            f"{plan.name} on JAX arrays binds the customop primitive, which runs "
            f"{describe_kind(plan.kind)}; grad uses {formula}; vmap uses {rule}."
        )

    def __call__(
        self, op: OperatorHandle, keyset: DispatchKeySet, /, *args: Any, **kwargs: Any
    ) -> Any:
        """Bind the primitive for this call (see the module docstring)."""
        plan = self._plan or self.plan()
        if plan.kind == "decompose" or _FAKE in keyset:
            return op.redispatch(keyset - _SERVED, *args, **kwargs)
        schema = op.schema
        api = api_of(plan)
        if schema.is_mutable:
            refuse(
                ValueError,
                api,
                f"the op writes to its argument {schema.mutated_arguments[0]!r}",
                "JAX arrays are immutable: every JAX operation makes new arrays",
                "Call a functional variant of the op (one that returns its result)",
            )
        statics, operands = flatten(schema, bind_values(schema, args, kwargs), api)
        if all(type(x) is ArrayImpl for x in operands):
            # Arrays, no tracers: the compiled call that bind would reach through JAX's
            # eval trace, minus its ~9 µs; inside a trace, jax.jit stages it instead.
            flat = compiled_call(*operands, op=plan, args=statics)
        else:
            flat = PRIMITIVE.bind(*operands, op=plan, args=statics)
        layout = plan.layout
        if layout is None:  # a Tensor[] return: its length comes from the fake impl
            layout = abstract(plan, statics, [aval_of(x) for x in operands])[1]
        return rebuild_outputs(layout, flat)

    def __repr__(self) -> str:
        return f"<ServedOp {self.handle.name}>"

"""What the JAX primitive does for one op: a snapshot of the op's registrations.

A `Plan` is the ``op`` parameter of every primitive call (JAX keys its caches
on it, by identity). When the op's kernels, fake, formula or batching rule
change, its `customop.jax._install` record makes a new plan, so a new trace
compiles anew; a function JAX traced before keeps what it traced, as it keeps
a Python constant.

Kernels, in this order (``kind``):

``"jax"``
    a kernel registered for the ``"jax"`` device type (a ``jax.numpy``
    function, or a fallback registered on the key): traced inline, so XLA
    sees and fuses it;
``"callback"``
    else the op's CPU kernel (its ``@custom_op`` body, or a ``"cpu"``
    kernel) on numpy arrays, through ``jax.pure_callback``: on the host only;
``"decompose"``
    the op is CompositeImplicitAutograd: its ops run instead, each its own
    primitive (the primitive is never bound for it);
``"missing"``
    none of these: lowering raises, naming the fixes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, NamedTuple, TypeAlias, final

from customop.autograd import AutogradFormula, formula_of
from customop.dispatch import DispatchKey, DispatchKeySet, OperatorHandle
from customop.jax._api import Primitive
from customop.jax._layout import OutLayout
from customop.schema import BaseType
from customop.vmap import VmapInfo, rule_of

__all__ = [
    "CPU_KEYS",
    "JAX_KEY",
    "JAX_KEYS",
    "PRIMITIVE",
    "Kind",
    "Plan",
    "VmapRule",
    "describe_kind",
    "kernel_kind",
    "vmap_rule",
]

Kind: TypeAlias = Literal["jax", "callback", "decompose", "missing"]

PRIMITIVE: Final[Any] = Primitive("customop")
"""The JAX primitive every customop op binds on JAX arrays (printed ``customop``).

Its operands are the call's tensors; its parameters ``op`` (the op, with the
kernels, fake impl, formula and batching rule it had when traced) and
``args`` (the other arguments, static). Its rules are registered on
``import customop.jax``.
"""
PRIMITIVE.multiple_results = True

#: The backend key JAX arrays dispatch to, renamed "jax" (``register_kernel("jax", fn)``).
JAX_KEY: Final = DispatchKey.PrivateUse2
JAX_KEYS: Final = DispatchKeySet(JAX_KEY)
CPU_KEYS: Final = DispatchKeySet(DispatchKey.CPU)
_CEA: Final = DispatchKey.CompositeExplicitAutograd
_CIA: Final = DispatchKey.CompositeImplicitAutograd

_DESCRIPTIONS: Final[dict[str, str]] = {
    "jax": "its 'jax' kernel, traced inline",
    "callback": "its CPU kernel on numpy arrays through jax.pure_callback (host only)",
    "decompose": "its CompositeImplicitAutograd decomposition (each op inside binds its own)",
    "missing": "nothing: it has no 'jax' kernel and no CPU kernel",
}


def kernel_kind(handle: OperatorHandle) -> Kind:
    """Which kernel serves the op on JAX arrays; the dispatcher's table precedence."""
    keys = handle.kernel_keys()
    d = handle.dispatcher
    if JAX_KEY in keys:
        return "jax"
    if _CEA in keys:  # the "jax" slot holds the @custom_op body: numpy code, on the host
        return "callback"
    if _CIA in keys:
        return "decompose"
    if d.fallback_source(JAX_KEY) is not None:
        return "jax"
    if DispatchKey.CPU in keys or d.fallback_source(DispatchKey.CPU) is not None:
        return "callback"
    return "missing"


def describe_kind(kind: Kind) -> str:
    """A phrase saying what runs for ``kind``."""
    return _DESCRIPTIONS[kind]


@final
class VmapRule(NamedTuple):
    """An op's batching rule, as the batching rule of `PRIMITIVE` calls it."""

    #: ``fn(info, in_dims, *args, **kwargs) -> (outputs, out_dims)``, torch's signature.
    fn: Callable[..., Any]
    #: ``info(batch_size)``: the ``info`` argument (``batch_size``, ``randomness``).
    info: Callable[[int], Any]


def vmap_rule(handle: OperatorHandle) -> VmapRule | None:
    """The op's batching rule (``register_vmap``, through ``customop.vmap.rule_of``), or
    None: the one place that reads it."""
    rule = rule_of(handle)
    if rule is None:
        return None
    # JAX has no implicit randomness for a rule to share or split: torch's default.
    return VmapRule(rule.fn, _info)


def _info(size: int) -> VmapInfo:
    return VmapInfo(batch_size=size, randomness="error")


def _fixed_layout(handle: OperatorHandle) -> OutLayout | None:
    """One array per return when every return is a Tensor (else abstract eval says)."""
    returns = handle.schema.returns
    plain = all(type(r.type) is BaseType and r.type.name == "Tensor" for r in returns)
    return (None,) * len(returns) if plain else None


@final
class Plan:
    """One op's kernel kind, formula and batching rule, as registered when it was made."""

    __slots__ = ("formula", "handle", "kind", "layout", "name", "owner", "rule", "shapes")

    def __init__(self, handle: OperatorHandle, owner: Any) -> None:
        self.handle = handle
        self.name = str(handle.name)
        self.owner = owner  # the op's record: warnings once per op, not per plan
        self.kind: Kind = kernel_kind(handle)
        self.formula: AutogradFormula | None = formula_of(handle)
        self.rule = vmap_rule(handle)
        self.layout = _fixed_layout(handle)
        #: Abstract evaluations, by (statics, input avals): (output avals, output layout).
        self.shapes: dict[tuple[Any, ...], tuple[list[Any], OutLayout]] = {}

    def __repr__(self) -> str:
        return self.name

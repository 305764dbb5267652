"""Marking fake impls so that ``get_ctx()`` knows it is called from one; the generated one.

NOTE: no per-call wrapper. A wrapper that set a context variable around every
fake impl call cost about 0.4 µs, most of the fake-mode call budget (1 µs).
Instead the fake impl's code object is recorded at registration, and
``get_ctx()`` (rare) looks for it among its callers' frames.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from customop.dispatch import DispatchKey, OperatorHandle
from customop.exceptions import RegistrationError
from customop.library._tagged import mark_generated
from customop.schema import FunctionSchema
from customop.tensor import FAKE_IMPL_CODES

__all__ = ["generated_fake", "refuse_fake_over_decomposition", "remember_fake_impl"]


def mutates_and_returns_nothing(*args: object, **kwargs: object) -> None:
    """The generated fake impl of an op that writes its inputs and returns nothing."""
    return None


mark_generated(mutates_and_returns_nothing)


def generated_fake(schema: FunctionSchema) -> Callable[..., None] | None:
    """The fake impl a ``@custom_op`` gets without ``register_fake``, or None.

    torch's rule (``can_generate_trivial_fake_impl``): an op that writes to an
    input and returns nothing (``-> ()``) has nothing to fake, so its fake impl
    returns None. (A functional op returning nothing is suspicious; like torch,
    it gets none.) It is registered as the op's ``Meta`` kernel, which the
    ``Fake`` key uses when no fake impl is registered: ``register_fake``
    overrides it without a warning, and removing that restores it.
    """
    if schema.returns or not schema.is_mutable:
        return None
    return mutates_and_returns_nothing


def refuse_fake_over_decomposition(op: OperatorHandle, api: str) -> None:
    """Refuse a fake impl for an op whose CompositeImplicitAutograd kernel would hide it.

    A CompositeImplicitAutograd kernel serves the Autograd keys, which every
    FakeTensor carries above ``Fake``, so the decomposition runs on fakes and a
    fake impl never would. torch refuses this registration too.
    """
    record = op._entry.top(DispatchKey.CompositeImplicitAutograd)
    if record is None:
        return
    raise RegistrationError(
        f"{api}: {op.name} has a CompositeImplicitAutograd kernel ({record.label}), so a fake "
        "impl would never run: that kernel serves the Autograd keys above Fake and "
        "decomposes the op on fakes too. Register the body as CompositeExplicitAutograd "
        "(register_kernel(op, 'default', fn) or Library.impl(name, fn, "
        "'CompositeExplicitAutograd')) and then its fake impl, or drop the fake impl and let "
        "the decomposition compute fake results."
    )


def remember_fake_impl(fn: Callable[..., Any], op: str) -> Callable[..., Any]:
    """Record ``fn`` as the fake impl of ``op`` (for ``get_ctx``); returns ``fn`` itself."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is not None:
        FAKE_IMPL_CODES[code] = op
    return fn

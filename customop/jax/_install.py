"""The JAX backend in a dispatcher: the ``"jax"`` key, JAX's array types, a kernel per op.

``install(dispatcher)``

1. names ``PrivateUse2`` ``"jax"``: ``op.register_kernel("jax", fn)``
   registers a ``jax.numpy`` kernel there;
2. makes ``jax.Array`` (and the class of its arrays) and ``jax.core.Tracer``
   tensor types on it, so JAX
   arrays and the tracers of ``jit``, ``grad`` and ``vmap`` dispatch to the
   key and its autograd key;
3. gives every op of the dispatcher, now and later, a `ServedOp` kernel on
   that autograd key (``AutogradJax``), which binds the customop primitive.

NOTE: why the autograd key, and why a kernel per op. The primitive must be
bound above the ``"jax"`` kernels, which it runs from its lowering; a
fallback on the backend key itself would lose to every op that has one. JAX's
transformations are the jax backend's autograd, as torch's autograd sits
above its backends, so the binding goes on the backend's autograd key. That
key has the dispatcher's default fallthrough fallback, which no adapter can
replace once the autograd layer re-registered it per key, so each op gets
its own kernel instead (an `OperatorListener` keeps them in step). Calls on
numpy arrays never reach the key: they cost nothing more.
"""

from __future__ import annotations

from functools import partial
from typing import Final
from weakref import WeakKeyDictionary, ref

import jax

from customop.adapter import OperatorListener, RegistrationHandle, operator_handle
from customop.dispatch import Dispatcher, OperatorHandle, run_or_defer
from customop.dispatch import dispatcher as default_dispatcher
from customop.jax._abstract import DEVICE
from customop.jax._api import ArrayImpl
from customop.jax._plan import JAX_KEY
from customop.jax._served import SERVED_KEY, ServedOp
from customop.tensor import register_backend

__all__ = ["BACKEND", "DEFAULT_INSTALL", "KEY", "SOURCE", "describe", "install"]

BACKEND: Final = "jax"
"""The backend's device type and key name: ``op.register_kernel("jax", fn)``."""
KEY: Final = JAX_KEY
"""The dispatch key customop.jax renames ``"jax"``: ``PrivateUse2`` (Dask has PrivateUse3)."""
#: Where dumps say the per-op kernels come from.
SOURCE: Final = "<customop jax>"
_DEBUG: Final = "binds the customop JAX primitive"


class _Backend(OperatorListener):
    """The per-op kernels of one dispatcher, kept in step with its ops."""

    def __init__(self) -> None:
        # Keyed by handle; the dispatcher is each handle's own (no reference back to it).
        self.ops: dict[OperatorHandle, tuple[ServedOp, RegistrationHandle]] = {}

    def on_operator_registered(self, op: OperatorHandle) -> None:
        """A def: serve the op (a redefinition in one write keeps its kernel)."""
        found = self.ops.get(op)
        if found is not None:
            found[0].changed()
            return
        served = ServedOp(op)
        registration = op.dispatcher.register_impl(
            op.name, SERVED_KEY, served, boxed=True, debug=_DEBUG, source=SOURCE
        )
        self.ops[op] = (served, registration)

    def on_operator_deregistered(self, op: OperatorHandle) -> None:
        """The def went: drop the kernel once the write is done (unless the op came back)."""
        if op in self.ops:
            # Not now: the dispatcher is in the middle of removing the def.
            run_or_defer(partial(self._drop_if_undefined, op))

    def on_operator_changed(self, op: OperatorHandle) -> None:
        """A kernel, fake, formula or rule came or went: the op plans again."""
        found = self.ops.get(op)
        if found is not None:
            found[0].changed()

    def _drop_if_undefined(self, op: OperatorHandle) -> None:
        with op.dispatcher.lock:
            found = self.ops.get(op)
            if found is None or op.has_schema:
                return
            del self.ops[op]
            found[1].remove()

    def close(self, dispatcher: Dispatcher) -> None:
        with dispatcher.lock:
            for _, registration in reversed(list(self.ops.values())):
                registration.remove()
            self.ops.clear()


# Weak both ways: the dispatcher holds its backend (a listener), which holds its ops.
_backends: WeakKeyDictionary[Dispatcher, ref[_Backend]] = WeakKeyDictionary()


def describe(op: object, *, dispatcher: Dispatcher | None = None) -> str:
    """What calling ``op`` on JAX arrays runs now: kernel, gradient and batching.

    Args:
        op: A `CustomOpDef`, an `OpOverload`, an `OperatorHandle` or a name ``"ns::op"``.
        dispatcher: Where to look a name up (default: ``customop.dispatcher``).

    Returns:
        One sentence, e.g. ``"demo::gelu on JAX arrays binds the customop primitive,
        which runs its 'jax' kernel, traced inline; grad uses its autograd formula;
        vmap uses its vmap rule."``

    Raises:
        ValueError: the op's dispatcher has no JAX backend (see `install`).
    """
    api = "customop.jax.describe"
    handle = operator_handle(op, default_dispatcher if dispatcher is None else dispatcher, api)
    weak = _backends.get(handle.dispatcher)
    backend = None if weak is None else weak()
    found = None if backend is None else backend.ops.get(handle)
    if found is None:
        raise ValueError(
            f"{api}: {handle.name}'s dispatcher has no JAX backend. Only a dispatcher "
            "with the backend turns JAX arrays into primitive calls. Call "
            "customop.jax.install(dispatcher) first."
        )
    return found[0].describe()


def install(dispatcher: Dispatcher) -> RegistrationHandle:
    """Make JAX arrays a backend of ``dispatcher``; one handle removes it all.

    Args:
        dispatcher: The dispatcher to extend (``customop.dispatcher`` gets this on
            ``import customop.jax``).

    Returns:
        A `RegistrationHandle` that removes the rename, the array types and the
        per-op kernels.

    Raises:
        RegistrationError: PrivateUse2 is already named, or JAX's types already registered.
    """
    handles = [dispatcher.rename_backend(KEY, BACKEND)]
    backend = _Backend()
    try:
        for array_type in (jax.Array, ArrayImpl, jax.core.Tracer):
            handles.append(
                register_backend(
                    array_type, BACKEND, KEY, device=lambda _: DEVICE, dispatcher=dispatcher
                )
            )
        _backends[dispatcher] = ref(backend)
        handles.append(dispatcher.add_listener(backend))
    except BaseException:
        backend.close(dispatcher)
        _backends.pop(dispatcher, None)
        RegistrationHandle.group(handles).remove()
        raise

    def undo() -> None:
        RegistrationHandle.group(handles).remove()
        backend.close(dispatcher)
        weak = _backends.get(dispatcher)
        if weak is not None and weak() is backend:
            del _backends[dispatcher]

    return RegistrationHandle(undo, description="jax backend", source=SOURCE)


#: What customop.jax registered in ``customop.dispatcher`` on import.
DEFAULT_INSTALL: Final = install(default_dispatcher)

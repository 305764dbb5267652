"""Which kernel serves each runtime key: PyTorch's table precedence, plus the Fake key's rules.

This is ``OperatorEntry::computeDispatchTableEntryWithDebug`` without the keys
customop does not have (CompositeExplicitAutogradNonFunctional, nested-tensor and
batched aliases, Undefined). For a runtime key, in order:

1. a kernel registered on the key itself (``kernel``);
2. a CompositeExplicitAutograd kernel, for backend keys (``default backend kernel``);
3. a CompositeImplicitAutograd kernel, for backend and autograd keys, except for
   an autograd key whose backend has a kernel or when a CompositeExplicitAutograd
   kernel exists (``math kernel``);
4. an Autograd alias kernel, for autograd keys (``autograd kernel``);
5. the dispatcher's fallback for the key (``backend fallback``);
6. nothing (``missing``): calls raise `MissingKernelError`.

``Fake`` instead takes its own kernel, else the operator's own ``Meta`` kernel
(``meta kernel``), else CompositeImplicitAutograd (a decomposition runs on fake
tensors too), else the Fake fallback. CompositeExplicitAutograd never serves
Fake: such kernels compute on real data. Whatever the rule, a chosen
`fallthrough` kernel reports as ``fallthrough``.

PyTorch also returns an "ambiguous autogradother" kernel when AutogradOther
would use a CompositeImplicitAutograd kernel while one of its backends has a
kernel; no customop backend maps to AutogradOther, so that case cannot arise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal, TypeAlias

from customop.dispatch._kernel import KernelRecord
from customop.dispatch._keys import DispatchKey

__all__ = ["AFFECTED", "Reason", "compute_entry"]

#: Why a table entry holds its kernel (what ``dump_table`` prints in brackets).
Reason: TypeAlias = Literal[
    "kernel",
    "default backend kernel",
    "math kernel",
    "autograd kernel",
    "meta kernel",
    "backend fallback",
    "fallthrough",
    "missing",
]

Stacks: TypeAlias = Mapping[DispatchKey, Sequence[KernelRecord]]
Fallbacks: TypeAlias = Mapping[DispatchKey, KernelRecord]
Choice: TypeAlias = tuple[KernelRecord | None, Reason]

_CEA = DispatchKey.CompositeExplicitAutograd
_CIA = DispatchKey.CompositeImplicitAutograd
_MISSING: Choice = (None, "missing")
# Key facts as plain sets: tables are recomputed on every registration, and enum
# properties cost a Python call each.
_BACKEND: Final = frozenset(key for key in DispatchKey if key.is_backend)
_AUTOGRAD: Final = frozenset(key for key in DispatchKey if key.is_autograd)
_BACKENDS_OF: Final = {key: tuple(key.backend_keys) for key in _AUTOGRAD}


def _affected(key: DispatchKey) -> tuple[DispatchKey, ...]:
    if key is _CEA:  # also the autograd keys: a CEA kernel blocks CIA there
        return tuple(sorted(_BACKEND | _AUTOGRAD, key=lambda k: k.value))
    if key.is_alias:
        return tuple(key.expansion)
    extra = [key.autograd_key] if key.autograd_key else []  # has_backend_kernel
    if key is DispatchKey.Meta:
        extra.append(DispatchKey.Fake)  # Fake borrows the Meta kernel
    return (key, *(k for k in extra if k is not None))


#: The runtime keys whose entries can change when a kernel on a key comes or goes.
AFFECTED: Final = {key: _affected(key) for key in DispatchKey}


def compute_entry(kernels: Stacks, fallbacks: Fallbacks, key: DispatchKey) -> Choice:
    """The kernel for runtime ``key`` and the reason, given newest-first stacks and fallbacks."""
    record, reason = _choose(kernels, fallbacks, key)
    if record is not None and record.is_fallthrough:
        return record, "fallthrough"
    return record, reason


def _top(kernels: Stacks, key: DispatchKey) -> KernelRecord | None:
    stack = kernels.get(key)
    return stack[0] if stack else None


def _choose(kernels: Stacks, fallbacks: Fallbacks, key: DispatchKey) -> Choice:
    direct = _top(kernels, key)
    if direct is not None:
        return direct, "kernel"
    if key is DispatchKey.Fake:
        return _choose_fake(kernels, fallbacks)
    explicit = _top(kernels, _CEA)
    if explicit is not None and key in _BACKEND:
        return explicit, "default backend kernel"
    implicit = _top(kernels, _CIA)
    in_implicit = key in _BACKEND or key in _AUTOGRAD
    if implicit is not None and in_implicit and not _has_backend_kernel(kernels, key, explicit):
        return implicit, "math kernel"
    autograd = _top(kernels, DispatchKey.Autograd)
    if autograd is not None and key in _AUTOGRAD:
        return autograd, "autograd kernel"
    return _fallback(fallbacks, key)


def _has_backend_kernel(kernels: Stacks, key: DispatchKey, explicit: KernelRecord | None) -> bool:
    # Only autograd keys have backends here; for them a backend kernel (or a
    # CompositeExplicitAutograd one) means the backend is meant to run, so the
    # decomposition must not hide it behind the autograd key.
    backends = _BACKENDS_OF.get(key)
    if backends is None:
        return False
    return explicit is not None or any(_top(kernels, backend) for backend in backends)


def _choose_fake(kernels: Stacks, fallbacks: Fallbacks) -> Choice:
    meta = _top(kernels, DispatchKey.Meta)
    if meta is not None:
        return meta, "meta kernel"
    implicit = _top(kernels, _CIA)
    if implicit is not None:
        return implicit, "math kernel"
    return _fallback(fallbacks, DispatchKey.Fake)


def _fallback(fallbacks: Fallbacks, key: DispatchKey) -> Choice:
    fallback = fallbacks.get(key)
    return (fallback, "backend fallback") if fallback is not None else _MISSING

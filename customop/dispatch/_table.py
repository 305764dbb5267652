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
5. the dispatcher's fallback for the key (``backend fallback``); a *wrapper*
   fallback (``register_fallback(..., wrapper=True)``, the Dask backend's) comes
   right after step 1 instead: composite kernels would compute on the wrapper
   array itself rather than on its chunks, as PyTorch's functorch keys sit above
   composite kernels;
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

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Literal, TypeAlias

from customop.dispatch._kernel import KernelRecord
from customop.dispatch._keys import DispatchKey

__all__ = [
    "AFFECTED",
    "Choice",
    "Fallbacks",
    "Reason",
    "Source",
    "Stacks",
    "affected_keys",
    "compute_entry",
    "plan",
    "served_by",
]

#: Why a table entry holds its kernel (what ``dump_table`` prints in brackets).
Reason: TypeAlias = Literal[
    "kernel",
    "default backend kernel",
    "math kernel",
    "autograd kernel",
    "meta kernel",
    "fake kernel",
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
    if key is DispatchKey.Fake:
        extra.append(DispatchKey.Meta)  # and Meta the fake one
    return (key, *(k for k in extra if k is not None))


#: The runtime keys whose entries can change when a kernel on a key comes or goes.
AFFECTED: Final = {key: _affected(key) for key in DispatchKey}


def affected_keys(kernel_keys: Iterable[DispatchKey]) -> tuple[DispatchKey, ...]:
    """`AFFECTED` of several kernels' keys together, in key order."""
    found = tuple(kernel_keys)
    if len(found) == 1:
        return AFFECTED[found[0]]
    keys = {key for kernel_key in found for key in AFFECTED[kernel_key]}
    return tuple(sorted(keys, key=lambda key: key.value))


def compute_entry(kernels: Stacks, fallbacks: Fallbacks, key: DispatchKey) -> Choice:
    """The kernel for runtime ``key`` and the reason, given newest-first stacks and fallbacks."""
    ((source, reason),) = plan(kernels, fallbacks, (key,))
    record = served_by(kernels, fallbacks, source, reason)
    if record is None:
        return _MISSING
    return record, "fallthrough" if record.is_fallthrough else reason


def plan(kernels: Stacks, fallbacks: Fallbacks, keys: Iterable[DispatchKey]) -> tuple[Source, ...]:
    """Where the kernel of each of ``keys`` comes from (see `served_by`)."""
    # NOTE: which key's kernel serves depends only on which stacks are non-empty
    # (stacks are dropped when emptied) and which keys have fallbacks, so the
    # rules run once per such pattern (`_plan`). A registration then costs a
    # lookup per key: a CompositeExplicitAutograd impl touches 13 keys.
    wrappers = frozenset(key for key, record in fallbacks.items() if record.wrapper)
    return _plan(frozenset(kernels), frozenset(fallbacks), tuple(keys), wrappers)


def served_by(
    kernels: Stacks, fallbacks: Fallbacks, source: DispatchKey | None, reason: Reason
) -> KernelRecord | None:
    """The record a `plan` entry names: a stack's top, a fallback, or None."""
    if source is None:
        return None
    return fallbacks[source] if reason == "backend fallback" else kernels[source][0]


#: Where a key's kernel comes from: the top of that key's stack, or, for a
#: "backend fallback", that key's fallback; None when nothing serves it.
Source: TypeAlias = tuple[DispatchKey | None, Reason]


@functools.lru_cache(maxsize=1024)
def _plan(
    present: frozenset[DispatchKey],
    fallbacks: frozenset[DispatchKey],
    keys: tuple[DispatchKey, ...],
    wrappers: frozenset[DispatchKey] = frozenset(),
) -> tuple[Source, ...]:
    return tuple(
        (key, "backend fallback")
        if key in wrappers and key not in present
        else _rule(present, fallbacks, key)
        for key in keys
    )


def _rule(
    present: frozenset[DispatchKey], fallbacks: frozenset[DispatchKey], key: DispatchKey
) -> Source:
    if key is DispatchKey.Meta and DispatchKey.Fake in present:
        # torch registers an op's fake impl as its Meta kernel (over one there
        # already), so torch meta tensors run the fake impl; customop.torch
        # mirrors a Meta kernel only for an op without one.
        return DispatchKey.Fake, "fake kernel"
    if key in present:
        return key, "kernel"
    if key is DispatchKey.Fake:
        if DispatchKey.Meta in present:
            return DispatchKey.Meta, "meta kernel"
        if _CIA in present:
            return _CIA, "math kernel"
    elif _CEA in present and key in _BACKEND:
        return _CEA, "default backend kernel"
    elif (
        _CIA in present
        and (key in _BACKEND or key in _AUTOGRAD)
        and not _has_backend_kernel(present, key)
    ):
        return _CIA, "math kernel"
    elif DispatchKey.Autograd in present and key in _AUTOGRAD:
        return DispatchKey.Autograd, "autograd kernel"
    return (key, "backend fallback") if key in fallbacks else (None, "missing")


def _has_backend_kernel(present: frozenset[DispatchKey], key: DispatchKey) -> bool:
    # Only autograd keys have backends here; for them a backend kernel (or a
    # CompositeExplicitAutograd one) means the backend is meant to run, so the
    # decomposition must not hide it behind the autograd key.
    backends = _BACKENDS_OF.get(key)
    if backends is None:
        return False
    return _CEA in present or any(backend in present for backend in backends)

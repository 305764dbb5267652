"""A reference model of the dispatch-table rules, written from PyTorch's own statement of them.

Independent of customop's implementation: it works on plain strings. The rules
are those of the note "[Note] DispatchTable computation" in PyTorch's
OperatorEntry.cpp, restricted to customop's keys, plus the Fake rules of
DESIGN.md §3 (fake kernel > Meta kernel > CompositeImplicitAutograd > error), and
torch.library's register_fake, which registers the fake impl as the op's Meta
kernel (Meta: fake kernel > everything else).
"""

from __future__ import annotations

BACKENDS = ("CPU", "CUDA", "PrivateUse1", "PrivateUse2", "PrivateUse3", "Meta")
AUTOGRAD = {f"Autograd{backend}": backend for backend in BACKENDS}
AUTOGRAD_KEYS = (*AUTOGRAD, "AutogradOther")

Kernels = dict[str, list[str]]  # key -> kernel names, newest first
Fallbacks = dict[str, str]  # runtime key -> fallback name


def choose(kernels: Kernels, fallbacks: Fallbacks, key: str) -> tuple[str | None, str]:
    """(kernel name, reason) for runtime ``key``. "fallthrough" names mark fallthroughs."""
    name, reason = _choose(kernels, fallbacks, key)
    if name == "fallthrough":
        return name, "fallthrough"
    return name, reason


def _top(kernels: Kernels, key: str) -> str | None:
    stack = kernels.get(key)
    return stack[0] if stack else None


def _choose(kernels: Kernels, fallbacks: Fallbacks, key: str) -> tuple[str | None, str]:
    # (0) torch's register_fake registers the fake impl as the Meta kernel.
    if key == "Meta" and _top(kernels, "Fake"):
        return _top(kernels, "Fake"), "fake kernel"
    # (1) Use kernel if it's directly registered to this key.
    if _top(kernels, key):
        return _top(kernels, key), "kernel"
    if key == "Fake":
        if _top(kernels, "Meta"):
            return _top(kernels, "Meta"), "meta kernel"
        if _top(kernels, "CompositeImplicitAutograd"):
            return _top(kernels, "CompositeImplicitAutograd"), "math kernel"
        return _fallback(fallbacks, key)
    # (2.2) Use kernel from CompositeExplicitAutograd if available (backend keys only).
    if key in BACKENDS and _top(kernels, "CompositeExplicitAutograd"):
        return _top(kernels, "CompositeExplicitAutograd"), "default backend kernel"
    # (2.3) CompositeImplicitAutograd, for backend and autograd keys. For autograd keys only
    # when there's no direct registration to its corresponding backend key or to
    # CompositeExplicitAutograd.
    if (key in BACKENDS or key in AUTOGRAD_KEYS) and _top(kernels, "CompositeImplicitAutograd"):
        backend = AUTOGRAD.get(key)
        has_backend_kernel = key in AUTOGRAD_KEYS and (
            bool(_top(kernels, "CompositeExplicitAutograd"))
            or bool(backend and _top(kernels, backend))
        )
        if not has_backend_kernel:
            return _top(kernels, "CompositeImplicitAutograd"), "math kernel"
    # (2.4) Use kernel from the Autograd alias if available (autograd keys only).
    if key in AUTOGRAD_KEYS and _top(kernels, "Autograd"):
        return _top(kernels, "Autograd"), "autograd kernel"
    # (3) Backend fallback, else (4) missing.
    return _fallback(fallbacks, key)


def _fallback(fallbacks: Fallbacks, key: str) -> tuple[str | None, str]:
    if key in fallbacks:
        return fallbacks[key], "backend fallback"
    return None, "missing"

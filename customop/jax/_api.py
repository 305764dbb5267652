"""The parts of JAX customop.jax builds on, in one place, checked once on import.

customop.jax defines one JAX primitive (`customop.jax.PRIMITIVE`) with the
route JAX's own guide to custom primitives takes: ``jax.extend.core.Primitive``
and the rule tables of ``jax.interpreters.ad`` (JVP, transpose),
``jax.interpreters.batching`` and ``jax.interpreters.mlir`` (lowering). They
have no compatibility promise (``jax.extend``'s own words), so every name is
looked up here and nowhere else (with the class of JAX's arrays, which
older releases do not derive from ``jax.Array``); a JAX that lacks one fails on
``import customop.jax`` with a message naming it, instead of deep inside a
trace. The rest is JAX's public API: ``jax.pure_callback``, ``jax.lax.map``,
``jax.tree_util``, ``jax.jit``.
"""

from __future__ import annotations

import importlib
from typing import Any, Final

import jax

__all__ = [
    "MIN_VERSION",
    "TESTED",
    "ArrayImpl",
    "Primitive",
    "ShapedArray",
    "Tracer",
    "Zero",
    "ad",
    "aval_of",
    "batching",
    "canonical",
    "instantiate_zeros",
    "lower_fun",
    "mlir",
]

#: The oldest JAX customop.jax was tested with: the floor it accepts.
MIN_VERSION: Final = (0, 5, 0)
#: The JAX versions customop.jax was tested with (its test suite passes on both).
TESTED: Final = "0.5.0 and 0.10.2"
_NEWEST: Final = "0.10.2"

#: (module, attribute) of every extension name customop.jax uses.
_NEEDED: Final = (
    ("jax.extend.core", "Primitive"),
    ("jax.core", "ShapedArray"),
    ("jax.core", "Tracer"),
    ("jax.interpreters.ad", "primitive_jvps"),
    ("jax.interpreters.ad", "primitive_transposes"),
    ("jax.interpreters.ad", "Zero"),
    ("jax.interpreters.ad", "instantiate_zeros"),
    ("jax.interpreters.batching", "primitive_batchers"),
    ("jax.interpreters.mlir", "register_lowering"),
    ("jax.interpreters.mlir", "lower_fun"),
    # The class of JAX's arrays: a real subclass of jax.Array only from JAX 0.6 or so
    # (a virtual one before), and customop finds array types by their MRO.
    ("jax._src.array", "ArrayImpl"),
)


def _load() -> dict[str, Any]:
    found: dict[str, Any] = {}
    missing: list[str] = []
    for module_name, name in _NEEDED:
        try:
            module = importlib.import_module(module_name)
            found[f"{module_name}.{name}"] = getattr(module, name)
        except (ImportError, AttributeError):
            missing.append(f"{module_name}.{name}")
    version = tuple(getattr(jax, "__version_info__", (0, 0, 0)))[:3]
    if missing or version < MIN_VERSION:
        what = f"lacks {', '.join(missing)}" if missing else "is older than customop.jax supports"
        raise ImportError(
            f"customop.jax: JAX {jax.__version__} {what}. customop.jax defines its primitive "
            "with JAX's extension API (jax.extend.core.Primitive and the jax.interpreters rule "
            f"tables), which changes between releases; it needs JAX >= "
            f"{'.'.join(map(str, MIN_VERSION))} and was tested with {TESTED}. Install a "
            f'tested JAX: pip install "jax[cpu]=={_NEWEST}".'
        )
    return found


_FOUND: Final = _load()

ArrayImpl: Final[Any] = _FOUND["jax._src.array.ArrayImpl"]
Primitive: Final[Any] = _FOUND["jax.extend.core.Primitive"]
ShapedArray: Final[Any] = _FOUND["jax.core.ShapedArray"]
Tracer: Final[Any] = _FOUND["jax.core.Tracer"]
Zero: Final[Any] = _FOUND["jax.interpreters.ad.Zero"]
instantiate_zeros: Final[Any] = _FOUND["jax.interpreters.ad.instantiate_zeros"]
lower_fun: Final[Any] = _FOUND["jax.interpreters.mlir.lower_fun"]
ad: Final[Any] = importlib.import_module("jax.interpreters.ad")
batching: Final[Any] = importlib.import_module("jax.interpreters.batching")
mlir: Final[Any] = importlib.import_module("jax.interpreters.mlir")


def aval_of(value: Any) -> Any:
    """The abstract value (shape, dtype) of a JAX array or tracer."""
    return jax.typeof(value) if hasattr(jax, "typeof") else jax.core.get_aval(value)


def canonical(dtype: Any) -> Any:
    """``dtype`` as JAX holds it now (``float64`` is ``float32`` unless x64 is enabled)."""
    return jax.dtypes.canonicalize_dtype(dtype)

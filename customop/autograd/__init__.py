"""Autograd: backward formulas on the Autograd keys; ``grad``, ``vjp`` and ``gradcheck``.

Formulas are registered with ``register_autograd`` (torch's meaning); the
transforms are JAX-style functions over functions made of customop ops, on
every backend. See ``docs/autograd.md``.
"""

from customop.autograd import _opcheck  # noqa: F401 -- adds opcheck's gradient checks
from customop.autograd._ctx import AutogradContext
from customop.autograd._gradcheck import gradcheck
from customop.autograd._transforms import grad
from customop.autograd._transforms import value_and_grad
from customop.autograd._transforms import vjp
from customop.autograd._formula import AutogradFormula
from customop.autograd._formula import formula_of
from customop.autograd._formula import register_autograd

# Internal API: the names sibling packages may import from this one's private
# modules (tests/test_layers.py checks every import against this list).
from customop.autograd._builtins import install as install
from customop.autograd._inner import check_input as check_input
from customop.autograd._inner import lost_gradient as lost_gradient
from customop.autograd._inner import record_inner as record_inner
from customop.autograd._inner import tape_depth as tape_depth
from customop.autograd._tracked import unwrap as unwrap

__internal__ = (
    "check_input",
    "install",
    "lost_gradient",
    "record_inner",
    "tape_depth",
    "unwrap",
)

__all__ = [
    "AutogradContext",
    "AutogradFormula",
    "formula_of",
    "grad",
    "gradcheck",
    "register_autograd",
    "value_and_grad",
    "vjp",
]

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

"""Batching: rules written once (``register_vmap``, torch's signature) and ``customop.vmap``.

A rule is the op's `VMAP_RULE` extra; ``customop.vmap`` runs functions of ops
on batches, calling each op's rule (or, without one, a loop over the batch),
and the adapters hand the same rule to torch (``torch.library.register_vmap``)
and JAX. See ``docs/vmap.md``.
"""

from customop.vmap._rule import VMAP_RULE
from customop.vmap._rule import Randomness
from customop.vmap._rule import VmapInfo
from customop.vmap._rule import VmapRule
from customop.vmap._rule import register_vmap
from customop.vmap._rule import rule_of

# Internal API: the names sibling packages may import from this one's private
# modules (tests/test_layers.py checks every import against this list).
from customop.vmap._rule import register_rule as register_rule

__internal__ = ("register_rule",)

__all__ = [  # noqa: RUF022 -- plain sorted() order, which tests/test_public_api.py checks
    "Randomness",
    "VMAP_RULE",
    "VmapInfo",
    "VmapRule",
    "register_vmap",
    "rule_of",
]

"""Batching: rules written once (``register_vmap``, torch's signature) and ``customop.vmap``.

A rule is the op's `VMAP_RULE` extra; ``customop.vmap`` runs functions of ops
on batches, calling each op's rule (or, without one, a loop over the batch),
and the adapters hand the same rule to torch (``torch.library.register_vmap``)
and JAX. See ``docs/vmap.md``.
"""

from customop.vmap._rule import VMAP_RULE
from customop.vmap._rule import Randomness
from customop.vmap._rule import TypedRule
from customop.vmap._rule import VmapInfo
from customop.vmap._rule import VmapRule
from customop.vmap._rule import register_vmap
from customop.vmap._rule import rule_of
from customop.vmap._transform import vmap
from customop.vmap._value import BatchedArray

# Internal API: the names sibling packages may import from this one's private
# modules (tests/test_layers.py checks every import against this list).
from customop.vmap._batching import check_result as check_result
from customop.vmap._interpreter import RANDOM_TAG as RANDOM_TAG
from customop.vmap._plan import rule_arguments as rule_arguments
from customop.vmap._rule import register_rule as register_rule

__internal__ = ("RANDOM_TAG", "check_result", "register_rule", "rule_arguments")

__all__ = [  # noqa: RUF022 -- plain sorted() order, which tests/test_public_api.py checks
    "BatchedArray",
    "Randomness",
    "TypedRule",
    "VMAP_RULE",
    "VmapInfo",
    "VmapRule",
    "register_vmap",
    "rule_of",
    "vmap",
]

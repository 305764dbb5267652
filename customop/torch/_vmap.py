"""customop's batching rule as torch's: a ``torch.library.register_vmap`` trampoline.

torch calls ``rule(info, in_dims, *args, **kwargs)`` with torch's own
``VmapInfo``; the trampoline looks the op's current rule up per call (a rule
replaced in customop is the one torch runs), passes it customop's `VmapInfo`
and every argument (torch leaves out those at their defaults), refuses a
random op under ``randomness="error"`` as ``customop.vmap`` does, and checks
the result against the schema so a wrong rule is named the same way in both
systems.
"""

from __future__ import annotations

from typing import Any

from customop.dispatch import OperatorHandle
from customop.torch._eager import KernelLibrary
from customop.vmap import RANDOM_TAG, VmapInfo, check_result, rule_arguments, rule_of

__all__ = ["has_rule", "register_rule"]


def has_rule(handle: OperatorHandle) -> bool:
    """Whether the op has a customop batching rule now."""
    return rule_of(handle) is not None


def register_rule(handle: OperatorHandle, lib: KernelLibrary) -> None:
    """Register a trampoline to the op's rule as its torch vmap rule, owned by ``lib``."""
    name = str(handle.name)
    random = RANDOM_TAG in handle.tags

    def rule(info: Any, in_dims: tuple[Any, ...], *args: Any, **kwargs: Any) -> Any:
        found = rule_of(handle)
        if found is None:
            raise RuntimeError(
                f"{name}: torch.vmap ran the op's customop vmap rule, which was removed. "
                "torch kept the rule registered while it existed. Register a rule again."
            )
        if random and info.randomness == "error":
            raise RuntimeError(
                f"vmap: {name} is a random op (tagged {RANDOM_TAG!r}) called with "
                "randomness='error'. Whether each example gets its own random values is "
                "ambiguous. Pass randomness='different' or 'same' to torch.vmap."
            )
        # torch leaves out arguments at their defaults; customop's rules get them all.
        dims, values, keywords = rule_arguments(found, handle.schema, in_dims, args, kwargs)
        result = found.fn(VmapInfo(info.batch_size, info.randomness), dims, *values, **keywords)
        check_result(handle, found, result)
        return result

    rule.__name__ = f"customop_vmap_{handle.name.name}"
    lib.register_vmap(name, rule)

"""``torch.library.opcheck`` takes customop's op objects once the op is registered in torch.

torch's opcheck accepts only torch's ``OpOverload`` (and its own
``CustomOpDef``); a torch user holding customop's `CustomOpDef`, `OpOverload`
or packet passes that. Importing ``customop.torch`` wraps
``torch.library.opcheck`` (once) with a conversion at its entry: a customop
op object becomes ``torch.ops.<ns>.<name>.<overload>``, the op
``customop.torch.register`` defined from it, and everything else reaches
torch's function unchanged. A customop op that is not in torch gets a
``ValueError`` saying how to register it (or to call ``customop.opcheck``).
"""

from __future__ import annotations

import functools
from typing import Any, Final

import torch

from customop.adapter import operator_handle
from customop.dispatch import OperatorHandle
from customop.dispatch import dispatcher as default_dispatcher
from customop.ops import OpDefinition, OpOverload, OpOverloadPacket

__all__ = ["install_opcheck", "torch_overload"]

_MARK: Final = "__customop_opcheck__"


def _handle(op: object) -> OperatorHandle | None:
    if isinstance(op, OpOverloadPacket):
        names = op.overloads()
        if len(names) != 1:
            raise ValueError(
                f"torch.library.opcheck: the packet {op.name!r} has {len(names)} overloads "
                f"({', '.join(names)}). A check runs one overload. Pass one, e.g. "
                f"{op.name.split('::')[-1]}.{names[0]}."
            )
        op = op.overload(names[0])
    if not isinstance(op, OpDefinition | OpOverload):
        return None
    handle = operator_handle(op, default_dispatcher, "torch.library.opcheck")
    return handle if isinstance(handle, OperatorHandle) else None


def torch_overload(op: object) -> object:
    """torch's OpOverload of a customop op object registered in torch; others as given.

    Raises:
        ValueError: ``op`` is a customop op that is not defined in torch.
    """
    handle = _handle(op)
    if handle is None:
        return op
    name = handle.name
    packet = getattr(getattr(torch.ops, name.namespace, None), name.name, None)
    overload = getattr(packet, name.overload or "default", None) if packet is not None else None
    schema = str(handle.schema).split("::", 1)[1]
    if overload is None or str(overload._schema).split("::", 1)[1] != schema:
        raise ValueError(
            f"torch.library.opcheck: the customop op {str(name)!r} is not registered in torch. "
            "torch's opcheck runs ops through torch's dispatcher. Call "
            "customop.torch.register(op) first, or check it with customop.opcheck(op, args)."
        )
    return overload


def install_opcheck() -> None:
    """Wrap ``torch.library.opcheck`` with the conversion (idempotent)."""
    original: Any = torch.library.opcheck
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def opcheck(op: Any, *args: Any, **kwargs: Any) -> Any:
        return original(torch_overload(op), *args, **kwargs)

    setattr(opcheck, _MARK, True)
    torch.library.opcheck = opcheck


install_opcheck()

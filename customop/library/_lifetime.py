"""How long a ``@custom_op`` definition lives, and what removing it frees.

NOTE: the live definition of each name is the op's `DEFINITION` extra on its
dispatcher entry (``customop.ops``), not a table beside the dispatcher: a
private dispatcher, with every definition made on it, is then freed with its
last user, and nothing holds a removed definition. The extra's handle is
adopted by the definition's library, so it goes whenever that library closes
(`op.remove()`, a redefinition, or closing the library by hand), together
with the definition's call code.

All of it happens under the dispatcher's registration lock (re-entrant), so
a redefinition (close the old library, define anew, record) is one write:
lookups through ``customop.ops`` and calls that find the op undefined wait
for the lock before they decide, and never see the gap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from customop.dispatch import Dispatcher
from customop.ops import DEFINITION, forget

if TYPE_CHECKING:
    from customop.library._custom_op import CustomOpDef

__all__ = ["live_definition", "record_definition", "remove_definition", "retire"]


def live_definition(dispatcher: Dispatcher, name: str) -> CustomOpDef[Any, Any] | None:
    """The @custom_op definition of ``name`` that is live on ``dispatcher``, if any."""
    from customop.library._custom_op import CustomOpDef  # noqa: PLC0415 -- it imports this

    handle = dispatcher.find_op(name)
    found = None if handle is None else handle.extra(DEFINITION)
    return found if isinstance(found, CustomOpDef) else None


def record_definition(definition: CustomOpDef[Any, Any]) -> None:
    """Make ``definition`` the live one of its name, until its library closes.

    The extra's record is its own undo, and tells the definition when it goes
    (`CustomOpDef.extra_removed`): one object per op, where a handle and a
    closure would be several (each costs time in every full gc collection).
    """
    dispatcher = definition.dispatcher
    record = dispatcher._add_extra(
        definition.operator, DEFINITION, definition, definition.source, then=definition
    )
    definition._library._adopt(record)


def retire(definition: CustomOpDef[Any, Any]) -> None:
    """What goes with a definition's `DEFINITION` extra: its call code."""
    forget("generated", definition.name)
    definition._op = None  # its call code, checks and cache go with it


def remove_definition(definition: CustomOpDef[Any, Any]) -> None:
    """Remove ``definition``'s op and kernels, and free what it holds (idempotent)."""
    with definition.dispatcher.lock:
        definition._library.close()

"""How long a ``@custom_op`` definition lives, and what removing it frees.

NOTE: the live definition of each name is kept on its dispatcher
(``Dispatcher._owners``), not in a module-level table: a private
dispatcher, with every definition made on it, is then freed with its last
user, and the table never holds a removed definition. A definition leaves
the table whenever its library closes (`op.remove()`, a redefinition, or
closing the library by hand), through a handle the library adopts.

All of it happens under the dispatcher's registration lock (re-entrant), so
a redefinition (close the old library, define anew, record) is one write:
lookups through ``customop.ops`` and calls that find the op undefined wait
for the lock before they decide, and never see the gap.
"""

from __future__ import annotations

import linecache
from typing import TYPE_CHECKING, Any, final

from customop.dispatch import Dispatcher

if TYPE_CHECKING:
    from customop.library._custom_op import CustomOpDef

__all__ = ["forget_code", "live_definition", "record_definition", "remove_definition"]


def live_definition(dispatcher: Dispatcher, name: str) -> CustomOpDef[Any, Any] | None:
    """The @custom_op definition of ``name`` that is live on ``dispatcher``, if any."""
    found: CustomOpDef[Any, Any] | None = dispatcher._owners.get(name)
    return found


def record_definition(definition: CustomOpDef[Any, Any]) -> None:
    """Make ``definition`` the live one of its name, until its library closes."""
    definition.dispatcher._owners[definition.name] = definition
    definition._library._adopt(_Forget(definition))


@final
class _Forget:
    """Takes a definition out of its dispatcher's table: what `record_definition`
    has the definition's library remove when it closes.

    One object, where a closure in a `RegistrationHandle` is six (handle,
    function, cells, their tuple): every object an op keeps costs time in
    each full gc collection (issue #12).
    """

    __slots__ = ("definition",)

    def __init__(self, definition: CustomOpDef[Any, Any]) -> None:
        self.definition = definition

    def remove(self) -> None:
        definition = self.definition
        dispatcher, name = definition.dispatcher, definition.name
        with dispatcher._lock:
            if dispatcher._owners.get(name) is definition:
                del dispatcher._owners[name]
            forget_code(name)
            definition._op = None  # its call code, checks and cache go with it


def remove_definition(definition: CustomOpDef[Any, Any]) -> None:
    """Remove ``definition``'s op and kernels, and free what it holds (idempotent)."""
    with definition.dispatcher._lock:
        definition._library.close()


def forget_code(name: str) -> None:
    """Drop the source lines kept for tracebacks of ``name``'s generated call code."""
    linecache.cache.pop(f"<customop generated {name}>", None)

"""Python names for schema names: the one mangling rule, shared by every output.

Operator, overload, namespace and argument names are identifiers in the
schema grammar, but some are Python keywords (``aten::random_.from`` has an
overload and an argument named ``from``). Python cannot write
``ops.aten.random_.from`` or ``f(from=1)``, so the typed stubs spell a keyword
with a trailing underscore, as PEP 8 advises: ``from`` -> ``from_``. Every
other name is kept as is, dunders included (``ops.aten.__and__``, as in
``torch.ops.aten.__and__``).
"""

from __future__ import annotations

import keyword

__all__ = ["RESERVED_OP_NAMES", "python_name"]

#: Operator names that every Python object already answers, so that
#: ``ops.<ns>.<name>`` could never reach the operator.
RESERVED_OP_NAMES = frozenset(dir(object)) | {"__call__", "__getattr__"}


def python_name(name: str) -> str:
    """The attribute or parameter name Python code uses for a schema name."""
    return name + "_" if keyword.iskeyword(name) else name

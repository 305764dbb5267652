"""The adapter interface: how a system outside customop serves its ops.

Adapters (``customop.torch``, ``customop.dask``, ``customop.autograd``, and
new ones) use only these names and the public facades; see
``docs/concepts/adapters.md``. In short:

* learn of ops and their changes: subclass `OperatorListener` and
  ``dispatcher.add_listener(...)`` (defs coming and going, and every kernel
  or extra change through ``on_operator_changed``);
* read an op: ``handle.schema``, ``handle.tags``, ``handle.table_entry(key)``,
  `select_kernel` for the kernel a key set picks, ``handle.extra(EXTRA)`` for
  facts subsystems attach (the fake impl is the ``Fake`` key's kernel; the
  autograd formula is ``customop.autograd.formula_of``);
* attach facts: declare an `Extra` and ``dispatcher.register_extra(...)``;
* install call code: `call_objects`, `on_call_object`, `generate_call` (one
  generator for all call code) and `install_call` (its handle undoes it);
* register fallbacks with a source: ``dispatcher.register_fallback(key, fn,
  source="<my adapter>")``;
* group handles: ``RegistrationHandle.group(handles)``.
"""

from customop.adapter._calls import call_objects
from customop.adapter._calls import generate_call
from customop.adapter._calls import install_call
from customop.adapter._calls import installed_call
from customop.dispatch import Extra
from customop.dispatch import OperatorListener
from customop.dispatch import RegistrationHandle
from customop.dispatch import select_kernel
from customop.ops import MISSING
from customop.ops import CallShape
from customop.ops import Guard
from customop.ops import bind_overload as bind
from customop.ops import definition_of
from customop.ops import forget
from customop.ops import item_types
from customop.ops import kernel_slot
from customop.ops import on_call_object
from customop.ops import operator_handle

__all__ = [  # noqa: RUF022 -- plain sorted() order, which tests/test_public_api.py checks
    "CallShape",
    "Extra",
    "Guard",
    "MISSING",
    "OperatorListener",
    "RegistrationHandle",
    "bind",
    "call_objects",
    "definition_of",
    "forget",
    "generate_call",
    "install_call",
    "installed_call",
    "item_types",
    "kernel_slot",
    "on_call_object",
    "operator_handle",
    "select_kernel",
]

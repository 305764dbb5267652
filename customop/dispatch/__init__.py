"""The dispatcher: dispatch keys, operator tables, registration lifecycle and calls.

PyTorch's C++ Dispatcher semantics (``aten/src/ATen/core/dispatch``) in Python.
See ``docs/concepts/dispatcher.md`` for the keys, the table precedence and the
registration lifecycle.
"""

from typing import TYPE_CHECKING, Any

from customop.schema import load_lazily
from customop.dispatch._dispatcher import Dispatcher
from customop.dispatch._dispatcher import LibraryKind
from customop.dispatch._extras import Extra
from customop.dispatch._handles import RegistrationHandle
from customop.dispatch._kernel import Kernel
from customop.dispatch._kernel import fallthrough
from customop.dispatch._keys import DispatchKey
from customop.dispatch._keys import DispatchKeySet
from customop.dispatch._keys import below
from customop.dispatch._local import Epoch
from customop.dispatch._local import EpochClock
from customop.dispatch._local import LocalKeysGuard
from customop.dispatch._local import epoch
from customop.dispatch._local import exclude_keys
from customop.dispatch._local import include_keys
from customop.dispatch._local import local_keys
from customop.dispatch._modes import DispatchMode
from customop.dispatch._modes import active_modes
from customop.dispatch._modes import register_dispatch_mode
from customop.dispatch._operator import OperatorHandle
from customop.dispatch._registry import OperatorListener
from customop.dispatch._table import Reason

if TYPE_CHECKING:
    from customop.dispatch._models import ArrayTypeInfo
    from customop.dispatch._models import DispatcherSnapshot
    from customop.dispatch._models import FallbackInfo
    from customop.dispatch._models import KernelInfo
    from customop.dispatch._models import LibraryInfo
    from customop.dispatch._models import OperatorInfo
    from customop.dispatch._models import TableEntry

# Internal API: the names sibling packages may import from this one's private
# modules (tests/test_layers.py checks every import against this list).
from customop.dispatch._extract import DEVICE_KEYS as DEVICE_KEYS
from customop.dispatch._global import dispatcher as dispatcher
from customop.dispatch._guard import RegistryLock as RegistryLock
from customop.dispatch._guard import run_or_defer as run_or_defer
from customop.dispatch._kernel import DEFAULT_SOURCE as DEFAULT_SOURCE
from customop.dispatch._kernel import caller_source as caller_source
from customop.dispatch._kernel import user_stacklevel as user_stacklevel
from customop.dispatch._keys import keyset_from_bits as keyset_from_bits
from customop.dispatch._local import DEFAULT_LOCAL as DEFAULT_LOCAL
from customop.dispatch._registry import KeyLike as KeyLike
from customop.dispatch._handles import Removable as Removable
from customop.dispatch._local import LOCAL_KEYS as LOCAL_KEYS
from customop.dispatch._local import local_state as local_state
from customop.dispatch._operator import missing_kernel as missing_kernel
from customop.dispatch._operator import select_kernel as select_kernel
from customop.dispatch._operator import is_live_kernel as is_live_kernel
from customop.dispatch._operator import undefined_kernel as undefined_kernel
from customop.dispatch._remembered import remember_handle as remember_handle
from customop.dispatch._remembered import remembered_handle as remembered_handle

__internal__ = (
    "DEFAULT_LOCAL",
    "DEFAULT_SOURCE",
    "DEVICE_KEYS",
    "KeyLike",
    "LOCAL_KEYS",
    "RegistryLock",
    "Removable",
    "caller_source",
    "dispatcher",
    "is_live_kernel",
    "keyset_from_bits",
    "local_state",
    "missing_kernel",
    "remember_handle",
    "remembered_handle",
    "run_or_defer",
    "select_kernel",
    "undefined_kernel",
    "user_stacklevel",
)

__all__ = [
    "ArrayTypeInfo",
    "DispatchKey",
    "DispatchKeySet",
    "DispatchMode",
    "Dispatcher",
    "DispatcherSnapshot",
    "Epoch",
    "EpochClock",
    "Extra",
    "FallbackInfo",
    "Kernel",
    "KernelInfo",
    "LibraryInfo",
    "LibraryKind",
    "LocalKeysGuard",
    "OperatorHandle",
    "OperatorInfo",
    "OperatorListener",
    "Reason",
    "RegistrationHandle",
    "TableEntry",
    "active_modes",
    "below",
    "epoch",
    "exclude_keys",
    "fallthrough",
    "include_keys",
    "local_keys",
    "register_dispatch_mode",
]


# The read-only views (pydantic models) load on first use: building their
# classes is a tenth of `import customop` (issue #12), and most programs never
# take a snapshot.
_VIEWS = frozenset(
    {
        "ArrayTypeInfo",
        "DispatcherSnapshot",
        "FallbackInfo",
        "KernelInfo",
        "LibraryInfo",
        "OperatorInfo",
        "TableEntry",
    }
)


def __getattr__(name: str) -> Any:
    return load_lazily(__name__, name, _VIEWS, "customop.dispatch._models")

"""The Dask backend in a dispatcher: a renamed PrivateUse key, the array type, a fallback.

``install(dispatcher)`` names ``PrivateUse3`` ``"dask"``, makes
``dask.array.core.Array`` (by name: nothing is imported) a tensor type on it,
and registers one boxed *wrapper* fallback on the key, which builds the dask
graph (`customop.dask._graph`, imported on the first call). A wrapper
fallback serves ahead of composite kernels (an op's ``@custom_op`` body is
one): they would compute on the dask array itself instead of its chunks.
Only a kernel registered for ``"dask"`` on the op itself beats it.
``customop.dispatcher`` gets this when customop is imported.
"""

from __future__ import annotations

import sys
from typing import Any, Final

from customop.dispatch import (
    DEFAULT_SOURCE,
    Dispatcher,
    DispatchKey,
    DispatchKeySet,
    OperatorHandle,
    RegistrationHandle,
)
from customop.dispatch import dispatcher as default_dispatcher
from customop.tensor import ArrayAdapter, Device, add_adapter, dtype

__all__ = ["ARRAY_TYPE", "BACKEND", "DEFAULT_INSTALL", "KEY", "install"]

#: The backend's device type and key name.
BACKEND: Final = "dask"
#: The key customop.dask renames and uses; PrivateUse1 and PrivateUse2 stay free for users.
KEY: Final = DispatchKey.PrivateUse3
#: dask.array.Array's qualified name (the class lives in dask.array.core).
ARRAY_TYPE: Final = "dask.array.core.Array"
_DEVICE: Final = Device(BACKEND)


def _empty(shape: tuple[int, ...], element: dtype, where: Device) -> Any:
    da = sys.modules["dask.array"]  # a dask array asked for this, so dask.array is imported
    return da.empty(shape, dtype=element.numpy)


def dask_fallback(op: OperatorHandle, keyset: DispatchKeySet, /, *args: Any, **kwargs: Any) -> Any:
    """The ``dask`` key's fallback: ``op`` on dask arrays as a lazy dask array."""
    from customop.dask._graph import call_on_chunks  # noqa: PLC0415 -- dask loads on first use

    return call_on_chunks(op, args, kwargs)


def install(dispatcher: Dispatcher) -> RegistrationHandle:
    """Make dask arrays a backend of ``dispatcher``; one handle removes it all.

    Args:
        dispatcher: The dispatcher to extend (``customop.dispatcher`` has it already).

    Returns:
        A `RegistrationHandle` that removes the rename, the array type and the fallback.

    Raises:
        RegistrationError: PrivateUse3 is already named, or dask arrays already registered.
    """
    handles = [dispatcher.rename_backend(KEY, BACKEND)]
    try:
        adapter = ArrayAdapter(ARRAY_TYPE, BACKEND, lambda _: _DEVICE, _empty, DEFAULT_SOURCE)
        handles.append(add_adapter(dispatcher, adapter, KEY))
        fallback = dispatcher._add_fallback(
            KEY, dask_fallback, "customop.dask", DEFAULT_SOURCE, wrapper=True
        )
        handles.append(fallback)
    except BaseException:
        RegistrationHandle.group(handles).remove()
        raise
    return RegistrationHandle.group(handles, description="dask backend", source=DEFAULT_SOURCE)


#: What customop.dask registered in ``customop.dispatcher`` on import.
DEFAULT_INSTALL: Final = install(default_dispatcher)

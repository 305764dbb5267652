"""`install_backends`: FakeTensor and the lazy torch / cupy adapters, in one dispatcher.

A `Dispatcher` knows ``numpy.ndarray`` by itself; the tensor layer adds the
rest. ``customop.dispatcher`` gets them when customop is imported; a dispatcher
made by hand (a test's) gets them from ``install_backends(dispatcher)``.
"""

from __future__ import annotations

from typing import Final

from customop.dispatch import (
    DEFAULT_SOURCE,
    Dispatcher,
    DispatchKey,
    DispatchKeySet,
    RegistrationHandle,
)
from customop.dispatch import dispatcher as default_dispatcher
from customop.tensor._backends import ArrayAdapter, add_adapter
from customop.tensor._fake import FakeTensor
from customop.tensor._lazy import install_lazy

__all__ = ["DEFAULT_BACKENDS", "FAKE_KEYS", "install_backends"]

#: The keys every FakeTensor carries; see `customop.tensor._fake` for why.
FAKE_KEYS: Final = DispatchKeySet(DispatchKey.Fake, DispatchKey.Meta, DispatchKey.AutogradMeta)

_FAKE: Final = ArrayAdapter(FakeTensor, None, lambda fake: fake.device, FakeTensor, DEFAULT_SOURCE)


def install_backends(dispatcher: Dispatcher) -> RegistrationHandle:
    """Register FakeTensor and the torch / cupy adapters (now or on import) in ``dispatcher``.

    Returns one handle that removes them all (and stops waiting for imports).

    Args:
        dispatcher: the dispatcher to register in.

    Returns:
        One handle for all of them.
    """
    fake = add_adapter(dispatcher, _FAKE, FAKE_KEYS)
    try:
        lazy = install_lazy(dispatcher)
    except BaseException:
        fake.remove()
        raise

    def undo() -> None:
        lazy.remove()
        fake.remove()

    return RegistrationHandle(undo, description="tensor backends", source=DEFAULT_SOURCE)


#: What the tensor layer registered in ``customop.dispatcher`` on import.
DEFAULT_BACKENDS: Final = install_backends(default_dispatcher)

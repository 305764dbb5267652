"""``CustomOpDef.set_kernel_enabled``: turn a device's registered kernel off for a while.

torch's ``CustomOpDef.set_kernel_enabled(device_type, enabled)``: a context
manager during which calls on that device run the op's own function (the
``@custom_op`` body) instead of the kernel ``register_kernel`` added, with a
log line (logger ``customop.library``, warning level, torch's phrases) when
there is nothing to change. Disabling stacks the body over the device's
kernels; leaving the block removes it, so the kernels come back as they were.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from customop.dispatch import RegistrationHandle
from customop.exceptions import KernelOverrideWarning, RegistrationError
from customop.library._hooks import device_keys

if TYPE_CHECKING:
    from customop.library._custom_op import CustomOpDef

__all__ = ["kernel_enabled"]

_log = logging.getLogger("customop.library")


@contextmanager
def kernel_enabled(
    definition: CustomOpDef[Any, Any], device_type: str, enabled: bool
) -> Iterator[None]:
    """The body of ``set_kernel_enabled`` (see the module docstring)."""
    name = definition.name
    disabled: dict[str, RegistrationHandle] = definition.__dict__.setdefault("_disabled", {})
    try:
        (key,) = device_keys(definition.dispatcher, device_type, "set_kernel_enabled")
    except (RegistrationError, ValueError):  # not one device type: no kernel of its own
        key = None
    has_kernel = key is not None and definition.operator.table_entry(key).reason == "kernel"
    if not has_kernel and device_type not in disabled:
        _log.warning(
            "%s: set_kernel_enabled(%r): no kernel was registered for this device type; "
            "nothing to %s.",
            name,
            device_type,
            "enable" if enabled else "disable",
        )
        yield
        return
    if enabled == (device_type not in disabled):
        _log.warning(
            "%s: the %r kernel is already %s.",
            name,
            device_type,
            "enabled" if enabled else "disabled",
        )
        yield
        return
    if enabled:
        handle = disabled.pop(device_type)
        handle.remove()
        try:
            yield
        finally:  # the block ends: disabled again, as before it
            disabled[device_type] = _stack_body(definition, key)
        return
    disabled[device_type] = _stack_body(definition, key)
    try:
        yield
    finally:
        disabled.pop(device_type).remove()


def _stack_body(definition: CustomOpDef[Any, Any], key: Any) -> RegistrationHandle:
    """The op's own function over the device's kernels (removed to bring them back)."""
    with warnings.catch_warnings():
        # Stacking over the user's kernel is the point here, not a mistake to report.
        warnings.simplefilter("ignore", KernelOverrideWarning)
        return definition._library.impl(definition.name, definition._fn, key)

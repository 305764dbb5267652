"""`Device`: where an array lives, parsed from ``"cpu"``, ``"cuda:1"``, ``"meta"``, ``"dask"``.

Like ``torch.device``, a device is a type plus an optional index, and
``Device("cuda") != Device("cuda:0")``. Unlike torch, any identifier is a
valid type, because a `Dispatcher` can rename a PrivateUse backend to a name
of the user's choosing (``"dask"``); whether a type names a backend is a
question for a dispatcher (``rename_backend``), asked when a call dispatches.
"""

from __future__ import annotations

import re
from typing import Any, Final, NoReturn, Protocol, TypeAlias, final

from customop.schema import add_built_in
from customop.symbolic import torch_function_hook

__all__ = ["Device", "DeviceLike", "HasDeviceType", "to_device"]

_TEXT: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?::(0|[1-9][0-9]*))?")


class HasDeviceType(Protocol):
    """A device object of another library, such as ``torch.device``: ``.type`` (and ``.index``)."""

    @property
    def type(self) -> str: ...


#: What APIs taking a device accept: a `Device`, its text, or a ``torch.device``-like object.
DeviceLike: TypeAlias = "Device | str | HasDeviceType"


@final
class Device:
    """A device: ``Device("cuda:1")``, ``Device("cuda", 1)``, ``Device(torch.device("cpu"))``.

    ``type`` is the backend's device type (``"cpu"``, ``"cuda"``, ``"meta"``,
    ``"privateuseone"`` or a renamed backend's name) and ``index`` the device
    number, or None when the text had none. Devices are immutable and
    hashable, print as their text, and equal other Devices with the same type
    and index only (``Device("cpu") == "cpu"`` is False, as in torch).
    """

    __slots__ = ("_index", "_type")

    _index: int | None
    _type: str

    def __init__(self, device: DeviceLike, index: int | None = None) -> None:
        kind, parsed = _parse(device)
        if index is not None:
            if parsed is not None:
                raise ValueError(
                    f"Device: {str(device)!r} already has an index, and index={index!r} was "
                    "passed too. A device has one index. Pass either the text with its index "
                    f"or Device({kind!r}, {index!r})."
                )
            parsed = _check_index(index)
        self._type = kind
        self._index = parsed

    @property
    def type(self) -> str:
        """The device type: ``"cuda"`` for ``cuda:1``."""
        return self._type

    @property
    def index(self) -> int | None:
        """The device number: ``1`` for ``cuda:1``, None for ``cuda``."""
        return self._index

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Device):
            return NotImplemented
        return self._type == other._type and self._index == other._index

    # torch's functions given a customop Device (torch.empty(n, device=x.device)) make a
    # fake in a fake impl, else run with torch's device.
    __torch_function__ = torch_function_hook

    def __hash__(self) -> int:
        return hash((self._type, self._index))

    def __str__(self) -> str:
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __repr__(self) -> str:
        return f"Device({str(self)!r})"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (Device, (str(self),))


def to_device(value: DeviceLike) -> Device:
    """``value`` as a `Device` (the same object when it already is one)."""
    if isinstance(value, Device):
        return value
    if isinstance(value, str):
        found = _PARSED.get(value)
        if found is None:
            found = Device(value)
            if len(_PARSED) < _PARSED_MAX:
                _PARSED[value] = found
        return found
    return Device(value)


# Parsed device strings: a program names few devices, and fakes are made often.
_PARSED: dict[str, Device] = {}
_PARSED_MAX: Final = 1024


def _parse(value: object) -> tuple[str, int | None]:
    if isinstance(value, Device):
        return value.type, value.index
    if isinstance(value, str):
        match = _TEXT.fullmatch(value)
        if match is None:
            _raise_bad_text(value)
        index = match.group(2)
        return match.group(1), None if index is None else int(index)
    kind = getattr(value, "type", None)
    if isinstance(kind, str):
        # A torch.device or alike: its type must parse like ours, its index be an int.
        parsed, _ = _parse(kind)
        index = getattr(value, "index", None)
        return parsed, None if index is None else _check_index(index)
    raise TypeError(
        f"Device: expected a device string or an object with a str .type, got "
        f"{type(value).__qualname__} {value!r}. A device names the backend an array lives on. "
        "Pass e.g. 'cpu', 'cuda:1' or a torch.device."
    )


def _check_index(index: object) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(
            f"Device: index {index!r} is not a non-negative int. Indices number the devices "
            "of one type from 0. Pass e.g. Device('cuda', 0)."
        )
    return index


def _raise_bad_text(text: str) -> NoReturn:
    raise ValueError(
        f"Device: {text!r} is not a device string. A device is a type with an optional index, "
        "like 'cpu', 'cuda' or 'cuda:1'. Write '<type>' or '<type>:<index>', with an "
        "identifier type and a non-negative index without leading zeros."
    )


# `device: customop.Device` infers as the schema type Device (next to the schema
# layer's str-based `customop.schema.Device`, which stays for string annotations).
add_built_in(Device, "Device")

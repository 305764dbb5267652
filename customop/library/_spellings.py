"""The spellings torch.library users write, read into customop's one spelling.

torch code passes ``tags="pointwise"`` or ``tags=torch.Tag.pointwise`` (one
tag), ``tags=None``, ``mutates_args={}`` (an empty dict, in vLLM and torchao)
and ``dispatch_key=""`` (torch's "the library's key"). The front-ends read
them here, so the Dispatcher below keeps one strict spelling: a tuple of
tag strings, a tuple of names, a key or None.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeAlias

from customop.schema import MutatesArgs, is_torch_tag, tag_name

__all__ = ["TagsLike", "read_mutates_args", "read_tags", "tag_name"]

#: A tag, or several: a str, a ``torch.Tag`` (read by its name), or an iterable of them.
TagsLike: TypeAlias = Any


def read_tags(tags: TagsLike) -> tuple[Any, ...]:
    """``tags`` as a tuple: ``None`` is none, one str or ``torch.Tag`` is one tag.

    Values that are not tags stay as they are, for the Dispatcher to refuse
    with its own message.
    """
    if tags is None:
        return ()
    if isinstance(tags, str) or is_torch_tag(tags):
        return (tag_name(tags),)
    if not isinstance(tags, Iterable):
        return (tags,)
    return tuple(tag_name(tag) for tag in tags)


def read_mutates_args(value: object) -> object:
    """Any collection of names (a list, set, ``{}``) as a tuple; strings and others unchanged."""
    if isinstance(value, str | MutatesArgs) or not isinstance(value, Iterable):
        return value  # the caller's validation explains what is wrong with it
    return tuple(value)

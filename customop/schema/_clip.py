"""Quoting user input in error messages, bounded.

Error messages quote the value, line or name that is wrong, but input can be
huge (a 10 MB line, a YAML alias bomb expanding to gigabytes): a message must
never grow with it. `clip` keeps at most ``limit`` characters, with an ellipsis
saying how much was cut.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

__all__ = ["LIMIT", "clip", "clip_repr", "close_matches"]

#: How many characters of user input a message quotes at most.
LIMIT: Final = 200


def clip(text: str, limit: int = LIMIT) -> str:
    """``text``, or its first ``limit`` characters and ``... (N more characters)``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def clip_repr(value: Any, limit: int = LIMIT) -> str:
    """``repr(value)`` clipped to ``limit`` characters; long strings are cut before
    ``repr`` runs, so a huge value costs no more than a short one."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value) - limit} more characters)"
    if isinstance(value, int) and value.bit_length() > 3 * limit:  # repr fails past 4,300 digits
        return f"<an integer of about {int(value.bit_length() * 0.30103)} digits>"
    if isinstance(value, list | tuple | dict | set | frozenset) and len(value) > limit:
        return f"<{type(value).__name__} of {len(value)} items>"
    try:
        text = repr(value)
    except ValueError:  # an integer past Python's 4,300-digit limit, inside a container
        return f"<{type(value).__name__} holding a huge integer>"
    return clip(text, limit)


def close_matches(word: str, choices: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """``difflib.get_close_matches``: the ``choices`` closest to ``word``, for "did you mean".

    difflib is imported on the first call: only error messages need it, and
    importing it is a millisecond of ``import customop`` (issue #12).

    Args:
        word: what the user wrote.
        choices: the valid spellings.
        n: at most this many matches.
        cutoff: how close a match must be, from 0 to 1.

    Returns:
        The closest choices, best first.
    """
    import difflib  # noqa: PLC0415 - loaded on first use, see above

    return difflib.get_close_matches(word, list(choices), n=n, cutoff=cutoff)

"""The cursor the schema parser reads with, and its error reporting.

There is no token list: the parser matches compiled patterns at a position,
which is what makes a pure-Python parser fast enough (see benchmarks/).
"""

from __future__ import annotations

import re
from typing import NoReturn

from customop.exceptions import SchemaParseError

__all__ = ["Cursor", "describe_at"]

_WS = re.compile(r"\s*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d[\w.]*|\.\.\.|->|\S")


def describe_at(text: str, pos: int) -> str:
    """What a reader sees at ``pos``: a quoted word, or "end of text"."""
    match = _WORD.match(text, _WS.match(text, pos).end())
    return "end of text" if match is None else repr(match.group())


def _excerpt(text: str, column: int) -> str:
    start = text.rfind("\n", 0, column) + 1
    end = text.find("\n", column)
    line = text[start : len(text) if end < 0 else end]
    return f"    {line}\n    {' ' * (column - start)}^"


class Cursor:
    """A position in schema text, with helpers that raise `SchemaParseError`."""

    __slots__ = ("api", "pos", "text")

    def __init__(self, text: str, api: str, pos: int = 0) -> None:
        self.text = text
        self.api = api
        self.pos = pos

    def fail(self, problem: str, help_text: str = "", *, at: int | None = None) -> NoReturn:
        """Raise: ``<api>: <problem> at column N. <help>`` with the text and a caret."""
        column = self.pos if at is None else at
        column = min(_WS.match(self.text, column).end(), len(self.text))
        tail = f" {help_text}" if help_text else ""
        message = f"{self.api}: {problem} at column {column}.{tail}\n{_excerpt(self.text, column)}"
        raise SchemaParseError(message, text=self.text, column=column)

    def expected(self, what: str, help_text: str = "") -> NoReturn:
        self.fail(f"expected {what} but found {describe_at(self.text, self.pos)}", help_text)

    def skip(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()

    def peek(self) -> str:
        """The next non-space character, or "" at the end."""
        self.skip()
        return self.text[self.pos : self.pos + 1]

    def accept(self, literal: str) -> bool:
        self.skip()
        if self.text.startswith(literal, self.pos):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str, help_text: str = "") -> None:
        if not self.accept(literal):
            self.expected(repr(literal), help_text)

    def ident(self, what: str = "an identifier") -> str:
        self.skip()
        match = _IDENT.match(self.text, self.pos)
        if match is None:
            self.expected(what)
        self.pos = match.end()
        return match.group()

    def match(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        self.skip()
        found = pattern.match(self.text, self.pos)
        if found is not None:
            self.pos = found.end()
        return found

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

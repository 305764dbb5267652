"""The cursor the schema parser reads with, and its error reporting.

There is no token list: the parser matches compiled patterns at a position,
which is what makes a pure-Python parser fast enough (see benchmarks/).
Whitespace and ``#`` comments (to the end of the line) separate tokens, as in
torch's lexer.

Every error is a `SchemaParseError` whose message reads
``<api>: <problem> at column N. <why>. <how to fix>``, then the offending line
and a caret under column N (0-based, like `SchemaParseError.column`).
"""

from __future__ import annotations

import re
from typing import NoReturn

from customop.exceptions import SchemaParseError
from customop.schema._clip import LIMIT, clip_repr

__all__ = ["MAX_DEPTH", "Cursor", "describe_at"]

# NOTE: the patterns are compiled by the first `Cursor` (or `describe_at`), not
# at import, as those of `customop.schema._fastpath`: compiling them is a share
# of `import customop` (issue #12), and many programs never parse a schema.
_WS: re.Pattern[str]
_IDENT: re.Pattern[str]
_COMMENT: re.Pattern[str]  # text with a '#' outside string literals: a comment
_WORD: re.Pattern[str]
_SURROGATE: re.Pattern[str]
_compiled = False


def _compile() -> None:
    global _WS, _IDENT, _COMMENT, _WORD, _SURROGATE, _compiled  # noqa: PLW0603 -- see the NOTE
    _WS = re.compile(r"(?:\s+|#[^\n]*)*")
    _IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
    _COMMENT = re.compile(r"""(?:[^#"']|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')*#""")
    _WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d[\w.]*|\.\.\.|->|=>|::|\S")
    _SURROGATE = re.compile("[\ud800-\udfff]")
    _compiled = True  # last: another thread may be reading the flag


#: How deeply types may nest (``Tensor[][]...``, ``((...))``) before the parser gives up.
MAX_DEPTH = 64


def describe_at(text: str, pos: int) -> str:
    """What a reader sees at ``pos``: a quoted word (clipped), or "end of text"."""
    if not _compiled:
        _compile()
    blank = _WS.match(text, pos)
    match = _WORD.match(text, pos if blank is None else blank.end())
    return "end of text" if match is None else clip_repr(match.group(), 40)


def _where(text: str, column: int) -> str:
    if "\n" not in text:
        return f"column {column}"
    line = text.count("\n", 0, column) + 1
    line_start = text.rfind("\n", 0, column) + 1
    return f"line {line}, column {column - line_start}"


def _excerpt(text: str, column: int) -> str:
    """The line of ``column`` and a caret under it; a long line shows `LIMIT` characters
    around the caret, and lone surrogates show as U+FFFD (so the message can be printed)."""
    start = text.rfind("\n", 0, column) + 1
    end = text.find("\n", column)
    end = len(text) if end < 0 else end
    low = max(start, column - LIMIT // 2)
    high = min(end, low + LIMIT)
    before, after = ("..." if low > start else ""), ("..." if high < end else "")
    line = _SURROGATE.sub("\ufffd", text[low:high])
    return f"    {before}{line}{after}\n    {' ' * (len(before) + column - low)}^"


class Cursor:
    """A position in schema text, with helpers that raise `SchemaParseError`."""

    __slots__ = ("api", "depth", "pos", "text")

    def __init__(self, text: str, api: str, pos: int = 0) -> None:
        if not _compiled:
            _compile()
        self.text = text
        self.api = api
        self.pos = pos
        self.depth = 0

    def fail(self, problem: str, help_text: str = "", *, at: int | None = None) -> NoReturn:
        """Raise: ``<api>: <problem> at column N. <help>`` with the text and a caret.

        The caret goes to ``at`` (default: the current position), moved past
        any whitespace so that it points at the offending token.
        """
        column = self.pos if at is None else at
        blank = _WS.match(self.text, column)
        column = min(column if blank is None else blank.end(), len(self.text))
        if column == len(self.text) and _COMMENT.match(self.text):
            help_text += " ('#' starts a comment, which runs to the end of the line.)"
        tail = f" {help_text.lstrip()}" if help_text else ""
        where = _where(self.text, column)
        message = f"{self.api}: {problem} at {where}.{tail}\n{_excerpt(self.text, column)}"
        raise SchemaParseError(message, text=self.text, column=column)

    def found(self) -> str:
        """What the reader sees next, for messages: ``'x'`` or ``end of text``."""
        return describe_at(self.text, self.pos)

    def expected(self, what: str, help_text: str = "") -> NoReturn:
        self.fail(f"expected {what} but found {self.found()}", help_text)

    def skip(self) -> None:
        blank = _WS.match(self.text, self.pos)
        if blank is not None:  # always: the pattern matches the empty string
            self.pos = blank.end()

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

    def ident(self, what: str = "an identifier", help_text: str = "") -> str:
        self.skip()
        match = _IDENT.match(self.text, self.pos)
        if match is None:
            if self.text[self.pos : self.pos + 1].isdigit():
                help_text = "Names start with a letter or '_'. " + help_text
            self.expected(what, help_text.rstrip())
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

"""The one exception tree of customop.

Every error customop raises on purpose is an instance of one of these classes,
and each subclasses the builtin that a caller would catch anyway::

    Exception
    ├── ValueError
    │   └── SchemaError                 an invalid schema model or value
    │       └── SchemaParseError        schema text that does not parse
    └── RuntimeError
        └── RegistrationError           a registration that conflicts or is malformed

Messages follow one shape: ``<api>: <what is wrong, naming the op / argument /
value>. <why it matters>. <how to fix it>``.
"""

from __future__ import annotations

__all__ = ["RegistrationError", "SchemaError", "SchemaParseError"]


class SchemaError(ValueError):
    """A schema, or a part of one, breaks an invariant of the schema model.

    When raised by a model's validation, ``loc`` is the path of the bad field
    (``("arguments", "0", "type", "name")``) and ``reason`` says what is wrong.
    """

    loc: tuple[str, ...] = ()
    reason: str = ""


class SchemaParseError(SchemaError):
    """Schema text that does not follow the grammar.

    The message quotes the text and points a caret at the offending column.
    ``text`` and ``column`` (0-based) are kept for tools.
    """

    def __init__(self, message: str, *, text: str = "", column: int = -1) -> None:
        super().__init__(message)
        self.text = text
        self.column = column


class RegistrationError(RuntimeError):
    """A registration conflicts with an existing one or is malformed."""

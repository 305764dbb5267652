"""The one exception tree of customop.

Every error customop raises on purpose is an instance of one of these classes,
and each subclasses the builtin that a caller would catch anyway::

    Exception
    ├── ValueError
    │   ├── SchemaError                 an invalid schema model or value
    │   │   ├── SchemaParseError        schema text that does not parse (a RuntimeError too)
    │   │   └── ExclusiveTagsError      tags that exclude each other (also an AssertionError)
    │   ├── DispatchKeyError            a dispatch key name or key set that is not valid
    │   ├── GraphError                  a malformed graph, or inputs that do not fit it
    │   └── CodegenError                a declaration file (ops.yaml) with invalid entries
    ├── LookupError
    │   └── UnknownOperatorError        an operator with no def (no schema) in the dispatcher
    ├── AssertionError
    │   ├── OpCheckError                opcheck found an op that breaks its schema or fake impl
    │   └── DebugCheckError             under debug_checks(), a call broke its schema
    ├── RuntimeError
    │   ├── RegistrationError           a registration that conflicts or is malformed
    │   │   ├── RegistrationValueError  ... a bad value where torch raises ValueError (also one)
    │   │   └── UnsupportedError        ... what torch has not implemented (a NotImplementedError)
    │   ├── CheckError                  a condition given to customop.check is False
    │   ├── DataDependentError          a branch on a size no fact decides (a data-dependent one)
    │   ├── KernelError                 a compiled (C++) kernel failed or refused its arguments
    │   ├── BuildError                  customop.cpp.load could not compile a library
    │   ├── KernelReturnError           a kernel returned what its op's schema or tags rule out
    │   ├── AutogradError               a gradient that cannot be computed, or is malformed
    │   │   └── GradcheckError          gradcheck found analytic and numeric gradients differ
    │   ├── VmapError                   a call vmap cannot batch exactly, or a wrong batching rule
    │   └── NotImplementedError
    │       └── MissingKernelError      a call whose dispatch key has no kernel
    └── Warning
        └── UserWarning
            ├── KernelOverrideWarning   a kernel registered over another for the same key
            └── VmapFallbackWarning     vmap batches an op without a rule by a loop (once per op)

Messages follow one shape: ``<api>: <what is wrong, naming the op / argument /
value>. <why it matters>. <how to fix it>``.
"""

from __future__ import annotations

__all__ = [
    "AutogradError",
    "BuildError",
    "CheckError",
    "CodegenError",
    "DataDependentError",
    "DebugCheckError",
    "DispatchKeyError",
    "ExclusiveTagsError",
    "GradcheckError",
    "GraphError",
    "KernelError",
    "KernelOverrideWarning",
    "KernelReturnError",
    "MissingKernelError",
    "OpCheckError",
    "RegistrationError",
    "RegistrationValueError",
    "SchemaError",
    "SchemaParseError",
    "UnknownOperatorError",
    "UnsupportedError",
    "VmapError",
    "VmapFallbackWarning",
]


class SchemaError(ValueError):
    """A schema, or a part of one, breaks an invariant of the schema model.

    When raised by a model's validation, ``loc`` is the path of the bad field
    (``("arguments", "0", "type", "name")``) and ``reason`` says what is wrong.
    """

    loc: tuple[str, ...] = ()
    reason: str = ""


class SchemaParseError(SchemaError, RuntimeError):
    """Schema text that does not follow the grammar.

    The message quotes the text and points a caret at the offending column.
    ``text`` and ``column`` (0-based) are kept for tools.
    """

    def __init__(self, message: str, *, text: str = "", column: int = -1) -> None:
        super().__init__(message)
        self.text = text
        self.column = column


class ExclusiveTagsError(SchemaError, AssertionError):
    """An op given tags that exclude each other (``inplace`` and ``out``).

    Also an ``AssertionError``, which torch raises for the same tags, so torch
    code that catches that keeps working.
    """


class DispatchKeyError(ValueError):
    """A dispatch key name that no key has, or a key used where it cannot be."""


class UnknownOperatorError(LookupError):
    """An operator the dispatcher has no schema for (never defined, or its def removed)."""

    def __init__(self, message: str, *, op: str = "") -> None:
        super().__init__(message)
        self.op = op


class RegistrationError(RuntimeError):
    """A registration conflicts with an existing one or is malformed."""


class KernelError(RuntimeError):
    """A compiled (C++) kernel failed: a ``CUSTOMOP_CHECK``, a C++ exception, or an argument
    it cannot take. ``op`` is the operator and ``source`` the kernel's ``file.cpp:line``."""

    def __init__(self, message: str, *, op: str = "", source: str = "") -> None:
        super().__init__(message)
        self.op = op
        self.source = source


class BuildError(RuntimeError):
    """``customop.cpp.load`` could not build a library: no compiler, or the compiler failed.
    ``command`` is the failing command line (empty when no compiler was found)."""

    def __init__(self, message: str, *, command: str = "") -> None:
        super().__init__(message)
        self.command = command


class KernelReturnError(RuntimeError):
    """A kernel returned what its op rules out: the kernel of an op tagged
    ``inplace`` must return its first argument, one tagged ``out`` its ``out``
    arguments (torch checks the same on every call, with a ``RuntimeError``)."""


class RegistrationValueError(RegistrationError, ValueError):
    """A registration refused for a bad value (a namespace, a library kind, a schema)
    where torch raises ValueError: torch code catching ValueError catches it too."""


class UnsupportedError(RegistrationError, NotImplementedError):
    """A registration torch does not support either (it raises NotImplementedError),
    such as an autograd formula for an op with keyword-only tensor arguments."""


class AutogradError(RuntimeError):
    """A gradient cannot be computed (no formula, untracked arithmetic), or a formula's
    backward returned the wrong number or shape of gradients."""


class GradcheckError(AutogradError):
    """`gradcheck` found analytic gradients that differ from finite differences."""


class VmapError(RuntimeError):
    """``customop.vmap`` cannot batch a computation exactly (plain array code on batched
    values, a batched value leaving its vmap), or an op's batching rule returned
    outputs that do not match its schema."""


class MissingKernelError(NotImplementedError):
    """A call dispatched to a key that has no kernel for the operator.

    ``op`` is the operator name and ``key`` the (display) name of the dispatch
    key, kept for tools such as the fake-tensor layer.
    """

    def __init__(self, message: str, *, op: str = "", key: str = "") -> None:
        super().__init__(message)
        self.op = op
        self.key = key


class KernelOverrideWarning(UserWarning):
    """A kernel was registered for an operator and key that already had one.

    The new kernel wins until its handle is removed; the old one comes back then.
    """


class VmapFallbackWarning(UserWarning):
    """``customop.vmap`` met an op without a batching rule and runs it once per example.

    The result is correct but slow; ``register_vmap`` gives the op a rule.
    Warned once per op.
    """


class CodegenError(ValueError):
    """A declaration file (``ops.yaml``) that codegen cannot turn into code.

    Codegen reads the whole file and collects every problem before raising.
    ``problems`` holds one line per problem, each naming the file, the line
    and the entry (``ops.yaml:12: entry 'add(Tensor x) -> Tensor': ...``);
    the message is those lines.
    """

    def __init__(self, message: str, *, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


class OpCheckError(AssertionError):
    """`opcheck` found that an op breaks its schema, its fake impl, or tracing."""


class GraphError(ValueError):
    """A graph that breaks an invariant, a JSON text that is not a graph, or
    inputs whose dtype, rank or sizes do not fit the graph's placeholders.

    ``problems`` holds one line per problem when several were collected (lint).
    """

    def __init__(self, message: str, *, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


class DebugCheckError(AssertionError):
    """An op call broke its schema: it mutated an input it does not declare, or
    returned an alias of an input from a functional op."""


class CheckError(RuntimeError):
    """A condition given to `check` (or `check_is_size`) is False."""


class DataDependentError(RuntimeError):
    """``bool()`` of a comparison of SymInts that neither ranges nor recorded facts decide.

    The value of a data-dependent size is unknown while tracing or running
    fake impls, so a branch on it cannot be taken. ``expression`` is the text
    of the comparison that failed.
    """

    def __init__(self, message: str, *, expression: str = "") -> None:
        super().__init__(message)
        self.expression = expression

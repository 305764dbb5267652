"""Load-time checks: a kernel's C++ type against the schema of the op it serves.

torch compares the schema inferred from a kernel's C++ type with the one
written in ``m.def`` when the kernel registers (``findSchemaDifferences``);
customop does the same when a library loads, before anything is registered.
As in torch, argument names, defaults and alias annotations are not compared
(``Tensor(a!)`` is a ``TensorView`` in C++), and ``SymInt`` is ``int64_t``.
"""

from __future__ import annotations

import re
from typing import Final

from customop.exceptions import RegistrationError
from customop.schema import FunctionSchema, parse_schema

__all__ = ["check_kernel_schema", "parse_record_schema"]

_ALIAS: Final = re.compile(r"\((?:[\w|*!]|\s|->)*\)")


def parse_record_schema(ns: str, text: str, source: str) -> FunctionSchema:
    """Parse a def's schema text, qualifying it with the block's namespace."""
    qualified = text if "::" in text.split("(", 1)[0] else f"{ns}::{text}"
    try:
        return parse_schema(qualified)
    except ValueError as error:
        raise RegistrationError(
            f"load_library: the schema written at {source} does not parse: {error}"
        ) from None


def _type_text(schema_type: object) -> str:
    return _ALIAS.sub("", str(schema_type)).replace("SymInt", "int")


def _signature(schema: FunctionSchema) -> tuple[list[str], list[str]]:
    return (
        [_type_text(argument.type) for argument in schema.arguments],
        [_type_text(ret.type) for ret in schema.returns],
    )


def check_kernel_schema(
    declared: FunctionSchema, declared_at: str, inferred: FunctionSchema, kernel_at: str
) -> None:
    """Raise a `RegistrationError` naming both schemas when the kernel's type does not fit."""
    args, rets = _signature(declared)
    kernel_args, kernel_rets = _signature(inferred)
    if args == kernel_args and rets == kernel_rets:
        return
    if len(args) != len(kernel_args):
        what = f"the schema has {len(args)} arguments, the C++ function {len(kernel_args)}"
    elif args != kernel_args:
        i = next(i for i, (a, b) in enumerate(zip(args, kernel_args, strict=True)) if a != b)
        name = declared.arguments[i].name
        what = f"argument {i} ({name}) is {args[i]} in the schema, {kernel_args[i]} in C++"
    else:
        theirs = ", ".join(kernel_rets)
        what = f"the schema returns ({', '.join(rets)}), the C++ function ({theirs})"
    raise RegistrationError(
        f"load_library: the C++ kernel for {declared.name} at {kernel_at} does not fit the "
        f"op's schema: {what}. Schema (at {declared_at}): {declared}; inferred from the C++ "
        f"type: {inferred}. A kernel receives its arguments as the schema types them. Change "
        "the C++ parameter types or the schema so that they agree (see the type table in "
        "docs/cpp.md)."
    )

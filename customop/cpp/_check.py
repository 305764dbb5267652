"""Load-time checks: a kernel's C++ type against the schema of the op it serves.

torch compares the schema inferred from a kernel's C++ type with the one
written in ``m.def`` when the kernel registers (``findSchemaDifferences``);
customop does the same when a library loads, before anything is registered.
As in torch, argument names, defaults and alias annotations are not compared
(``Tensor(a!)`` is a ``TensorView`` in C++), and ``SymInt`` is ``int64_t``.

A kernel for an op returning tensors may instead take them as trailing
parameters and return void (destination passing, ``.out_from_fake()``):
customop then allocates the outputs from the op's fake impl.
"""

from __future__ import annotations

import re
from typing import Final, NoReturn

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


def _destination(args: list[str], rets: list[str]) -> tuple[list[str], list[str]] | None:
    """The C++ signature of the destination-passing kernel of an op returning tensors."""
    if not rets or any(ret != "Tensor" for ret in rets):
        return None
    return [*args, *rets], []


def check_kernel_schema(
    declared: FunctionSchema,
    declared_at: str,
    inferred: FunctionSchema,
    kernel_at: str,
    *,
    out_from_fake: bool = False,
) -> bool:
    """Whether the kernel takes its outputs (destination passing): its C++ type is the
    schema's arguments, then one ``TensorView`` per returned Tensor, returning void.

    Raises a `RegistrationError` naming both schemas when the kernel's type fits
    neither shape (or not the destination shape, for an ``.out_from_fake()`` kernel).
    """
    args, rets = _signature(declared)
    kernel = _signature(inferred)
    destination = _destination(args, rets)
    if kernel == destination:
        return True
    if out_from_fake:
        _raise_not_destination(declared, declared_at, inferred, kernel_at, destination)
    if kernel == (args, rets):
        return False
    kernel_args, kernel_rets = kernel
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


def _raise_not_destination(
    declared: FunctionSchema,
    declared_at: str,
    inferred: FunctionSchema,
    kernel_at: str,
    destination: tuple[list[str], list[str]] | None,
) -> NoReturn:
    if destination is None:
        what = f"the op returns ({', '.join(_signature(declared)[1])}), not only Tensors"
        fix = "Drop .out_from_fake() and return the results from the kernel"
    else:
        wanted = ", ".join(destination[0])
        what = f"the kernel should take ({wanted}) and return void"
        fix = "Add one TensorView parameter per returned Tensor after the arguments"
    raise RegistrationError(
        f"load_library: the C++ kernel for {declared.name} at {kernel_at} is registered with "
        f".out_from_fake(), but {what}. Schema (at {declared_at}): {declared}; inferred from "
        f"the C++ type: {inferred}. customop passes the outputs it allocates from the fake "
        f"impl after the arguments. {fix}."
    )

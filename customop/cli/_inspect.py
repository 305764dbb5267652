"""``customop infer MODULE:FUNC`` and ``customop dump``: look at ops without writing code."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from typing import Any

from customop.cli._schema import explain
from customop.dispatch import dispatcher
from customop.exceptions import UnknownOperatorError
from customop.schema import MutatesArgs, infer_schema

__all__ = ["add_inspect_commands", "run_dump", "run_infer"]


def add_inspect_commands(commands: Any) -> None:
    infer = commands.add_parser(
        "infer",
        help="infer the schema of a typed Python function (MODULE:FUNC)",
        description=(
            "Import MODULE (from the current directory, as python -m does), find FUNC in it "
            "and print the schema its type hints give, with each argument explained."
        ),
    )
    infer.add_argument("target", metavar="MODULE:FUNC", help="e.g. mypkg.kernels:scale")
    infer.add_argument(
        "--mutates", nargs="*", default=[], metavar="ARG",
        help="parameters the function writes to ('unknown' for MutatesArgs.UNKNOWN)",
    )  # fmt: skip
    infer.add_argument("--name", help="operator name for the schema, e.g. mylib::scale")
    dump = commands.add_parser(
        "dump",
        help="show registered ops, kernels and dispatch tables",
        description=(
            "List the operators registered on customop's process-wide dispatcher, with the "
            "keys that have kernels. With --op, show that operator's kernels per key (with "
            "where each was registered) and its computed dispatch table; with --key, only that "
            "key. Ops come from the modules named with --module, imported first, and from "
            "the compiled libraries named with --library, loaded first."
        ),
    )
    dump.add_argument("--op", help="one operator, e.g. mylib::add or mylib::add.out")
    dump.add_argument("--key", help="a dispatch key, e.g. CPU: only that key")
    dump.add_argument(
        "--module", action="append", default=[], metavar="MOD",
        help="import MOD first (it registers its ops); repeatable",
    )  # fmt: skip
    dump.add_argument(
        "--library", action="append", default=[], metavar="PATH",
        help="load the compiled C++ library PATH first (customop.load_library); repeatable",
    )  # fmt: skip


def _import(name: str) -> Any:
    # Like `python -m`: modules in the current directory are importable.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name is not None and name.startswith(error.name):
            raise LookupError(
                f"cannot import module {_clip(name)!r} ({error}). The command imports it to "
                "find your code. Check the name and run from the directory that contains it."
            ) from None
        raise _import_failed(name, error) from error
    except SyntaxError as error:
        where = f"{os.path.basename(error.filename or '?')}:{error.lineno}"
        raise ImportError(
            f"cannot import module {_clip(name)!r}: syntax error at {where}: {error.msg}. "
            "Fix the module; run with --debug for the traceback."
        ) from error
    except Exception as error:
        raise _import_failed(name, error) from error


def _import_failed(name: str, error: BaseException) -> ImportError:
    """Importing a user module raised: one line naming the module, the error and where."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    detail = _clip(str(error).splitlines()[0] if str(error) else "")
    return ImportError(
        f"importing module {_clip(name)!r} raised {type(error).__name__}{where}: {detail}. "
        "The command imports it to find your ops. Fix the module; run with --debug for the "
        "traceback."
    )


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_infer(args: argparse.Namespace) -> str:
    module_name, _, attribute = str(args.target).partition(":")
    if not module_name or not attribute:
        raise ValueError(
            f"infer: target {args.target!r} is not MODULE:FUNC. The command needs the "
            "module to import and the function in it. Write e.g. mypkg.kernels:scale."
        )
    target: Any = _import(module_name)
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise LookupError(
                f"infer: module {module_name!r} has no attribute {attribute!r}. "
                "The function must be reachable from the module. Check the spelling."
            )
        target = getattr(target, part)
    fn = getattr(target, "__wrapped__", target)  # a @custom_op: infer its function
    mutates = MutatesArgs.UNKNOWN if args.mutates == ["unknown"] else tuple(args.mutates)
    return explain(infer_schema(fn, mutates_args=mutates, op_name=args.name))


def run_dump(args: argparse.Namespace) -> str:
    for module in args.module:
        _import(module)
    for path in args.library:
        from customop.cpp import load_library  # noqa: PLC0415 -- only dump --library loads C++

        load_library(path)
    if args.op:
        if not (args.module or args.library) and dispatcher.find_op(args.op) is None:
            raise UnknownOperatorError(
                f"dump: operator {_clip(args.op)!r} is not registered, and no --module was "
                "given. dump sees the ops of the modules it imports, and customop registers "
                f"none by itself. Add --module MOD, the module that defines it: customop dump "
                f"--op {_clip(args.op)} --module mypkg.ops.",
                op=args.op,
            )
        handle = dispatcher.find_schema_or_throw(args.op)
        if args.key:
            entry = handle.table_entry(args.key)
            return f"{args.op} {entry.key}: {entry.kernel or '(no kernel)'} [{entry.reason}]"
        return dispatcher.dump(handle) + "\n\n" + dispatcher.dump_table(handle)
    names = dispatcher.registrations_for_dispatch_key(args.key) if args.key else None
    snapshot = dispatcher.snapshot()
    lines = []
    for info in snapshot.operators:
        if names is not None and str(info.name) not in names:
            continue
        keys = ", ".join(kernel.key for kernel in info.kernels) or "no kernels"
        lines.append(f"{info.schema_text or info.name}\n    kernels: {keys}")
    if not lines:
        return _no_operators(args)
    return "\n".join(lines)


def _no_operators(args: argparse.Namespace) -> str:
    """Why the listing is empty, and what to do about it."""
    where = f" with a kernel for {args.key}" if args.key else ""
    if args.library and not args.module:
        paths = ", ".join(repr(p) for p in args.library)
        return f"no operators{where}: {paths} registered none (only IMPL blocks, or none)."
    if not args.module:
        return f"no operators{where}. Import the module that defines them with --module MOD."
    modules = ", ".join(repr(m) for m in args.module)
    if args.key:
        return f"no operators{where}. Drop --key to list every operator {modules} registered."
    return (
        f"no operators: importing {modules} registered none on customop's process-wide "
        "dispatcher. dump shows ops defined when the module is imported, on the default "
        "dispatcher: not ones defined inside functions, under `if __name__ == '__main__':`, "
        "or on a Dispatcher of their own (dispatcher=...)."
    )

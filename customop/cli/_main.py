"""Entry point: argument parsing and one-line errors (tracebacks only with --debug)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from customop.cli._demo import run_demo
from customop.cli._gen import add_gen_command, run_gen
from customop.cli._inspect import add_inspect_commands, run_dump, run_infer
from customop.cli._schema import explain_schema
from customop.exceptions import CodegenError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="customop", description="Define, inspect and explain custom operators."
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("demo", help="define, call, fake and trace ops on built-in examples")
    schema = commands.add_parser("schema", help="parse, validate and explain a schema")
    schema.add_argument("text", help='schema text, e.g. "ns::op(Tensor x) -> Tensor"')
    schema.add_argument(
        "--style", choices=("canonical", "source"), default="canonical",
        help="how to print the schema back (default: torch's canonical spelling)",
    )  # fmt: skip
    add_inspect_commands(commands)
    add_gen_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``customop`` command line, as ``customop ...`` or ``python -m customop ...``.

    Args:
        argv: the arguments after the program name; ``None`` reads ``sys.argv``.

    Returns:
        The exit status: 0 on success, 1 after printing a one-line error
        (``--debug`` shows the traceback instead), 2 for a usage error.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            print(run_demo())
        elif args.command == "schema":
            print(explain_schema(args.text, args.style))
        elif args.command == "gen":
            print(run_gen(args))
        elif args.command == "infer":
            print(run_infer(args))
        elif args.command == "dump":
            print(run_dump(args))
    except (ValueError, TypeError, LookupError, RuntimeError, OSError, ImportError) as error:
        if args.debug:
            raise
        # One line, no traceback (--debug shows it); a schema error's caret
        # excerpt follows on the next lines, since the column alone is hard to find.
        lines = str(error).splitlines() or [type(error).__name__]
        print(f"customop: error: {lines[0].removeprefix('customop: ')}", file=sys.stderr)
        if isinstance(error, CodegenError):
            print("\n".join(lines[1:]), file=sys.stderr)  # one line per bad entry
        elif len(lines) > 1 and lines[-1].strip() == "^":
            print("\n".join(lines[-2:]), file=sys.stderr)
        return 1
    return 0

"""Entry point: argument parsing and one-line errors (tracebacks only with --debug)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from customop.cli._gen import add_gen_command, run_gen
from customop.cli._schema import explain_schema

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="customop", description="Define, inspect and explain custom operators."
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    schema = commands.add_parser("schema", help="parse, validate and explain a schema")
    schema.add_argument("text", help='schema text, e.g. "ns::op(Tensor x) -> Tensor"')
    schema.add_argument(
        "--style", choices=("canonical", "source"), default="canonical",
        help="how to print the schema back (default: torch's canonical spelling)",
    )  # fmt: skip
    add_gen_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "schema":
            print(explain_schema(args.text, args.style))
        elif args.command == "gen":
            print(run_gen(args))
    except (ValueError, TypeError, LookupError, RuntimeError, OSError, ImportError) as error:
        if args.debug:
            raise
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"customop: error: {first_line}", file=sys.stderr)
        detail = str(error).splitlines()[1:]
        if detail:
            print("\n".join(detail), file=sys.stderr)
        return 1
    return 0

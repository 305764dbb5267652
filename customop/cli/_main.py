"""Entry point: argument parsing and one-line errors (tracebacks only with --debug)."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from typing import Final

from customop import __version__
from customop.cli._demo import run_demo
from customop.cli._gen import add_gen_command, run_gen
from customop.cli._inspect import add_inspect_commands, run_dump, run_infer
from customop.cli._schema import explain_schema
from customop.exceptions import CodegenError

__all__ = ["main"]

COMMANDS: Final = ("demo", "schema", "infer", "gen", "dump")
#: Error output is bounded whatever the input: a line is cut to MAX_LINE
#: characters, a schema excerpt to MAX_EXCERPT around its caret, and at most
#: MAX_LINES lines follow the first. (Messages quote at most ~200 characters
#: of input themselves; these limits hold even when one does not.)
MAX_LINE: Final = 400
MAX_EXCERPT: Final = 200
MAX_LINES: Final = 50
#: Errors the user can fix (bad input, missing files or modules); anything
#: else is a bug in customop or in the user's module, reported as one line too.
USER_ERRORS: Final = (ValueError, TypeError, LookupError, RuntimeError, OSError, ImportError)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="customop", description="Define, inspect and explain custom operators."
    )
    parser.add_argument("--version", action="version", version=f"customop {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser(
        "demo",
        help="define, call, fake and trace ops on built-in examples",
        description=(
            "Run customop's main job on built-in examples: define three ops with @custom_op, "
            "call them on numpy arrays, show a dispatch table with each kernel's source, run "
            "them under FakeTensorMode, and trace a function into a graph, printed as code "
            "and as a Mermaid diagram. It registers on a private dispatcher and writes no files."
        ),
    )
    schema = commands.add_parser("schema", help="parse, validate and explain a schema")
    schema.add_argument("text", help='schema text, e.g. "ns::op(Tensor x) -> Tensor"')
    schema.add_argument(
        "--style", choices=("canonical", "source"), default="canonical",
        help="how to print the schema back (default: torch's canonical spelling)",
    )  # fmt: skip
    add_inspect_commands(commands)
    add_gen_command(commands)
    return parser


def _unknown_command(argv: Sequence[str]) -> str | None:
    """A 'did you mean' error for a mistyped command, or None if the command is known."""
    words = [a for a in argv if not a.startswith("-")]
    if not words or words[0] in COMMANDS:
        return None
    word = _clip(words[0], MAX_EXCERPT)
    close = difflib.get_close_matches(words[0], COMMANDS, n=1)
    hint = f"Did you mean {close[0]!r}? " if close else ""
    return f"unknown command {word!r}. {hint}Commands: {', '.join(COMMANDS)}."


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``customop`` command line, as ``customop ...`` or ``python -m customop ...``.

    Args:
        argv: the arguments after the program name; ``None`` reads ``sys.argv``.

    Returns:
        The exit status: 0 on success, 1 after printing a one-line error
        (``--debug`` shows the traceback instead), 2 for a usage error.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser()
    unknown = _unknown_command(argv)
    if unknown is not None and not {"-h", "--help", "--version"} & set(argv):
        parser.print_usage(sys.stderr)
        print(f"customop: error: {unknown}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    try:
        print(_run(args))
    except Exception as error:
        if args.debug:
            raise
        _report(error)
        return 1
    return 0


def _run(args: argparse.Namespace) -> str:
    if args.command == "demo":
        return run_demo()
    if args.command == "schema":
        return explain_schema(args.text, args.style)
    if args.command == "gen":
        return run_gen(args)
    if args.command == "infer":
        return run_infer(args)
    return run_dump(args)


def _report(error: Exception) -> None:
    """One bounded error line on stderr (plus a caret excerpt or one line per bad entry)."""
    lines = _message(error).splitlines() or [type(error).__name__]
    first = _clip(lines[0].removeprefix("customop: "))
    if not isinstance(error, USER_ERRORS):
        first = (
            f"unexpected {type(error).__name__}: {first} (run with --debug for the "
            "traceback; if customop itself raised it, please report it)"
        )
    print(f"customop: error: {first}", file=sys.stderr)
    if isinstance(error, CodegenError) and len(lines) > 1:
        rest = lines[1:]  # one line per bad entry
        extra = [f"... and {len(rest) - MAX_LINES} more"] if len(rest) > MAX_LINES else []
        print("\n".join([_clip(line) for line in rest[:MAX_LINES]] + extra), file=sys.stderr)
    elif len(lines) > 1 and lines[-1].strip() == "^":
        # A schema error's caret excerpt: the column alone is hard to find.
        print("\n".join(_caret_window(lines[-2], lines[-1])), file=sys.stderr)


def _message(error: Exception) -> str:
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        # Not "[Errno 2] No such file or directory: 'x'": a sentence naming the file.
        name = _clip(str(error.filename), MAX_EXCERPT)
        return f"{error.strerror.lower()}: {name!r}. Check the path."
    return str(error)


def _clip(text: str, limit: int = MAX_LINE) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _caret_window(text: str, caret: str) -> list[str]:
    """The excerpt and its caret line, cut to MAX_EXCERPT characters around the caret."""
    if len(text) <= MAX_EXCERPT:
        return [text, caret]
    column = caret.index("^")
    start = max(0, min(column - MAX_EXCERPT // 2, len(text) - MAX_EXCERPT))
    prefix = "..." if start > 0 else ""
    window = text[start : start + MAX_EXCERPT]
    suffix = "..." if start + MAX_EXCERPT < len(text) else ""
    return [prefix + window + suffix, " " * (len(prefix) + column - start) + "^"]

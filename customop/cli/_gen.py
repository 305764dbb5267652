"""``customop gen OPS.yaml --out DIR``: declarations to a registration module and stubs."""

from __future__ import annotations

import argparse
import os
import sys

from customop.codegen import GenOptions, generate

__all__ = ["add_gen_command", "run_gen"]


def add_gen_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    gen = commands.add_parser(
        "gen",
        help="generate a registration module and typed stubs from YAML declarations",
        description=(
            "Read OPS.yaml (PyTorch's native_functions.yaml format) and write DIR/NAME.py, "
            "which registers the operators when imported, and DIR/NAME.pyi, its typed stub. "
            "Every problem of the file is reported, one line each, before anything is written."
        ),
    )
    gen.add_argument("yaml", metavar="OPS.yaml", help="the declaration file")
    gen.add_argument("--out", metavar="DIR", required=True, help="directory to write into")
    gen.add_argument("--name", help="module name of the generated files (default: the YAML stem)")
    gen.add_argument(
        "--namespace", default="aten",
        help="namespace of funcs written without 'ns::' (default: aten, as in torchgen)",
    )  # fmt: skip
    gen.add_argument(
        "--kernels", metavar="MODULE",
        help="module that bare kernel names (e.g. 'add_out') live in; "
        "without it they are reported as unbound and not registered",
    )  # fmt: skip
    gen.add_argument(
        "--tags", metavar="FILE",
        help="tags file (torch's tags.yaml format) to check tags against (default: built-in)",
    )  # fmt: skip
    gen.add_argument(
        "--no-check-kernels", dest="check_kernels", action="store_false",
        help="do not import the kernels' modules to check the kernel paths (by default each "
        "module that can be found from the current directory is imported)",
    )  # fmt: skip
    gen.add_argument("--quiet", action="store_true", help="print only the files written")


def run_gen(args: argparse.Namespace) -> str:
    if not os.path.isfile(args.yaml):
        what = "is a directory" if os.path.isdir(args.yaml) else "does not exist"
        where = "" if os.path.isabs(args.yaml) else f" (looked in {_clip(os.getcwd())})"
        raise FileNotFoundError(
            f"gen: the declaration file {_clip(args.yaml)!r} {what}{where}. "
            "The command reads the ops to generate from it. Check the path."
        )
    options = GenOptions(
        namespace=args.namespace,
        kernels=args.kernels,
        tags_file=args.tags,
        module_name=args.name,
        check_kernels=args.check_kernels,
    )
    if args.check_kernels and os.getcwd() not in sys.path:
        # Kernel modules are found from the current directory, as `python -m` finds them.
        sys.path.insert(0, os.getcwd())
    try:
        files = generate(args.yaml, args.out, options)
    except UnicodeDecodeError as error:
        why = f"it is not UTF-8 text ({error.reason})"
        raise ValueError(_unreadable(args.yaml, why)) from error
    except Exception as error:
        if type(error).__module__.split(".")[0] != "yaml":  # yaml is optional: no import
            raise
        problem = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(_unreadable(args.yaml, f"it is not valid YAML ({problem})")) from error
    lines = [f"wrote {files.module}", f"wrote {files.stub}"]
    report = files.report.format()
    return "\n".join(lines + ([] if args.quiet else [report]))


def _unreadable(path: str, why: str) -> str:
    return (
        f"gen: cannot read the declaration file {_clip(path)!r}: {_clip(why)}. "
        "The command reads op declarations from it. Fix the file; --debug shows the traceback."
    )


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."

"""``generate``: a declaration file to ``DIR/<module>.py`` and ``DIR/<module>.pyi``."""

from __future__ import annotations

from pathlib import Path

from customop.codegen._kernels import check_kernels
from customop.codegen._load import load_declarations, raise_problems
from customop.codegen._model import CodegenReport, GenOptions, _Model, is_name
from customop.codegen._render import render_registration
from customop.codegen._stubs import render_stubs
from customop.exceptions import CodegenError
from customop.schema import clip, clip_repr

__all__ = ["GeneratedFiles", "generate"]


class GeneratedFiles(_Model):
    """What `generate` wrote, and the report of the declaration file."""

    module: Path
    stub: Path
    report: CodegenReport


def _module_name(path: Path, options: GenOptions) -> str:
    name = options.module_name or path.stem
    if not is_name(name):
        message = (
            f"customop gen: module name {clip_repr(name)} (from {clip(path.name)}) is not a "
            "Python identifier. "
            "The generated files are imported by that name. "
            "Pass a name, e.g. --name my_ops (module_name= in GenOptions)."
        )
        raise CodegenError(message, problems=(message,))
    return name


def generate(
    path: str | Path, out: str | Path, options: GenOptions | None = None
) -> GeneratedFiles:
    """Read and check the declaration file at ``path``, then write the registration
    module and its typed stub into the directory ``out`` (created if needed).

    Nothing is written unless the whole file is valid; `CodegenError` lists
    every problem otherwise. With ``options.check_kernels`` (the default),
    each kernel's module is imported, when it can be found, and a kernel path
    that names nothing is a problem of its line.

    Args:
        path: the declaration file.
        out: the directory to write into.
        options: namespace, kernels module, tags file and module name.

    Returns:
        The files written, and a report of what the file declares but codegen
        does not use.

    Raises:
        CodegenError: the file has problems (every one, one per line).
    """
    path, out, options = Path(path), Path(out), options or GenOptions()
    name = _module_name(path, options)
    declarations = load_declarations(path, options)
    report = declarations.report()
    if options.check_kernels:
        problems, unchecked = check_kernels(declarations)
        raise_problems(problems)
        report = report.model_copy(update={"unchecked_kernels": unchecked})
    module = render_registration(declarations, name)
    stub = render_stubs(declarations, name)
    out.mkdir(parents=True, exist_ok=True)
    files = GeneratedFiles(module=out / f"{name}.py", stub=out / f"{name}.pyi", report=report)
    files.module.write_text(module, encoding="utf-8")
    files.stub.write_text(stub, encoding="utf-8")
    return files

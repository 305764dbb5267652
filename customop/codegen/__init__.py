"""Codegen: YAML operator declarations to a registration module and typed stubs.

``customop gen ops.yaml --out DIR`` (or `generate`) reads a file in PyTorch's
``native_functions.yaml`` format and writes ``DIR/<name>.py``, which registers
the operators with `customop.Library` when imported, and ``DIR/<name>.pyi``,
through which mypy checks every ``<ns>.<op>(...)`` call. Reading YAML needs
PyYAML: ``pip install "customop[codegen]"``. See docs/codegen.md.
"""

from customop.codegen._generate import GeneratedFiles
from customop.codegen._generate import generate
from customop.codegen._load import load_declarations
from customop.codegen._model import CodegenReport
from customop.codegen._model import CppKernel
from customop.codegen._model import Declaration
from customop.codegen._model import DeclarationFile
from customop.codegen._model import GenOptions
from customop.codegen._model import KernelBinding
from customop.codegen._model import KernelPath
from customop.codegen._model import Unused
from customop.codegen._render import render_registration
from customop.codegen._stubs import render_stubs
from customop.codegen._yaml import load_tags

__all__ = [
    "CodegenReport",
    "CppKernel",
    "Declaration",
    "DeclarationFile",
    "GenOptions",
    "GeneratedFiles",
    "KernelBinding",
    "KernelPath",
    "Unused",
    "generate",
    "load_declarations",
    "load_tags",
    "render_registration",
    "render_stubs",
]

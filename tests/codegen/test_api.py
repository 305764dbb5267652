"""The public surface of customop.codegen, and what importing it costs."""

from __future__ import annotations

import subprocess
import sys

import customop.codegen
import customop.exceptions

CODEGEN = [
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


def test_codegen_all_is_pinned_and_sorted() -> None:
    assert customop.codegen.__all__ == CODEGEN == sorted(CODEGEN)
    assert all(hasattr(customop.codegen, name) for name in CODEGEN)


def test_codegen_error_is_a_value_error() -> None:
    assert "CodegenError" in customop.exceptions.__all__
    assert issubclass(customop.exceptions.CodegenError, ValueError)


def test_importing_codegen_does_not_import_yaml() -> None:
    code = "import sys, customop.codegen, customop.cli; print('yaml' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"

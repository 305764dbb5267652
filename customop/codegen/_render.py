"""The registration module: one DEF library per namespace, one IMPL library per key.

Kernels are looked up eagerly, when the module is imported, and registered
as the very function objects the YAML names: a call dispatches straight to
the kernel, with no trampoline frame (DESIGN §8), and a wrong kernel path
fails when the module is imported rather than at some later first call, with
an ImportError naming the YAML file and line (the module's ``_kernel``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from customop.codegen import _templates as t
from customop.codegen._model import CppKernel, Declaration, DeclarationFile, KernelPath
from customop.codegen._names import python_name
from customop.codegen._tables import CUSTOMOP_KEYS

__all__ = ["py_string", "py_tuple", "render_registration", "safe_text", "source_name"]


# What `json.dumps(..., ensure_ascii=False)` leaves unescaped but generated source must
# not hold raw: characters that are not printable (line separators like U+2028, which
# tools split lines at; lone surrogates, which UTF-8 cannot encode).
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    if char.isprintable():  # lone surrogates are not
        return char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def py_string(text: str) -> str:
    """A double-quoted Python literal of ``text``, safe anywhere in generated source.

    Quotes and backslashes are escaped, so the literal (or its inside, in a
    docstring or comment) can never end early; control and other unprintable
    characters are escaped, so it is one line. Printable non-ASCII text stays as
    it is: JSON's ``\\ud83d\\ude00`` spelling of an emoji would be two lone
    surrogates in Python.
    """
    quoted = json.dumps(text, ensure_ascii=False)
    return quoted if quoted.isascii() else _UNPRINTABLE.sub(_escape, quoted)


def safe_text(text: str) -> str:
    """``text`` escaped for a comment or a docstring: `py_string` without its quotes."""
    return py_string(text)[1:-1]


def py_tuple(items: list[str]) -> str:
    """A Python tuple display of ready expressions: ``(a,)``, ``(a, b)``."""
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def source_name(declarations: DeclarationFile) -> str:
    """The YAML file as generated headers name it: its file name, so output is the
    same wherever the file lives, escaped (`safe_text`): a file name can hold quotes
    and newlines, and it goes into a comment and a docstring."""
    return safe_text(Path(declarations.path).name)


def _define(var: str, decl: Declaration) -> str:
    tags = f", tags={py_tuple([py_string(tag) for tag in decl.tags])}" if decl.tags else ""
    return f"{var}.define({py_string(decl.define_text)}{tags})"


def _lookup(kernel: KernelPath | CppKernel, key: str, op: str, where: str) -> str:
    """The expression that loads a kernel in the generated module, naming its YAML line.

    A C++ kernel is ``customop.cpp.kernel(...)``, looked up the same way (so a
    missing ``customop[cpp]`` is also an ImportError naming the line).
    """
    at = py_string(where)
    if isinstance(kernel, CppKernel):
        loader = f"_kernel({py_string(kernel.module)}, {py_string('kernel')}, {at})"
        return (
            f"{loader}({py_string(kernel.library)}, {py_string(kernel.name)}, "
            f"op={py_string(op)}, key={py_string(key)}, relative_to=__file__)"
        )
    return f"_kernel({py_string(kernel.module)}, {py_string(kernel.qualname)}, {at})"


def _namespace_blocks(
    namespace: str, decls: list[Declaration], source: str
) -> tuple[str, list[str]]:
    """The DEF block and the IMPL blocks of one namespace, and their variable names."""
    def_var = f"_def_{namespace}"
    blocks = [
        t.DEF_LIBRARY.substitute(
            namespace=namespace,
            var=def_var,
            defines="\n".join(_define(def_var, decl) for decl in decls),
        )
    ]
    names = [def_var]
    impls: dict[str, list[tuple[str, str]]] = {}  # key -> (name.overload, kernel expression)
    for decl in decls:
        overload = decl.name.name + (f".{decl.name.overload}" if decl.name.overload else "")
        for binding in decl.dispatch:
            if binding.kernel is not None:
                where = f"{source}:{binding.line}"
                lookup = _lookup(binding.kernel, binding.key, str(decl.name), where)
                impls.setdefault(binding.key, []).append((overload, lookup))
    for key in (key for key in CUSTOMOP_KEYS if key in impls):
        impl_var = f"_impl_{namespace}_{key}"  # keys have no '_', so this is unique
        lines = "\n".join(f"{impl_var}.impl({py_string(op)}, {fn})" for op, fn in impls[key])
        blocks.append(
            t.IMPL_LIBRARY.substitute(namespace=namespace, key=key, var=impl_var, impls=lines)
        )
        names.append(impl_var)
    return "\n".join(blocks), names


def _namespace_binding(namespace: str) -> str:
    attr = python_name(namespace)
    if attr == namespace:
        return f"{attr} = _customop.ops.{namespace}"
    return f"{attr} = getattr(_customop.ops, {py_string(namespace)})"


def render_registration(declarations: DeclarationFile, module: str) -> str:
    """The text of ``<module>.py`` for a validated declaration file.

    Args:
        declarations: the validated declarations.
        module: the generated module's name.

    Returns:
        The module's source text.
    """
    source = source_name(declarations)
    namespaces = declarations.namespaces
    blocks, library_names = [], []
    for namespace, decls in declarations.by_namespace().items():
        block, names = _namespace_blocks(namespace, decls, source)
        blocks.append(block)
        library_names += names
    exported = sorted([*map(python_name, namespaces), "unregister"])
    return t.MODULE.substitute(
        header=t.HEADER.substitute(source=source),
        source=source,
        module=module,
        example=python_name(namespaces[0]) if namespaces else "unregister",
        all=", ".join(py_string(name) for name in exported),
        libraries="\n".join(blocks),
        libraries_tuple=py_tuple(library_names),
        namespaces="\n".join(_namespace_binding(ns) for ns in namespaces),
    )

"""The models codegen works on: options, kernel paths, declarations and the report."""

from __future__ import annotations

import keyword
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from customop.exceptions import CodegenError
from customop.schema import FunctionSchema, OperatorName, clip_repr

__all__ = [
    "CodegenReport",
    "CppKernel",
    "Declaration",
    "DeclarationFile",
    "GenOptions",
    "KernelBinding",
    "KernelPath",
    "Unused",
    "Variant",
    "is_dotted_name",
    "is_name",
    "plural",
    "tally",
]

Variant = Literal["function", "method"]


def is_name(text: str) -> bool:
    """An identifier Python code can write: ASCII, not a keyword."""
    return text.isidentifier() and text.isascii() and not keyword.iskeyword(text)


def is_dotted_name(text: str) -> bool:
    return all(is_name(part) for part in text.split("."))


def plural(count: int, noun: str, nouns: str = "") -> str:
    """``1 entry``, ``2 entries``: ``nouns`` is the plural when it is not ``noun + 's'``."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GenOptions(_Model):
    """How to read a declaration file and name what is generated.

    - ``namespace``: the namespace of funcs written without ``ns::`` (``aten``
      by default, as in torchgen, so PyTorch's own file reads as is);
    - ``kernels``: the module that bare kernel names (``add_out``) live in;
      without it they are listed as unbound and not registered;
    - ``tags_file``: a file in torch's ``tags.yaml`` format that tags are
      checked against, instead of the built-in set;
    - ``module_name``: the name of the generated module (``DIR/<name>.py`` and
      ``.pyi``); by default the YAML file's stem;
    - ``check_kernels``: import each kernel's module, when it can be found, and
      report a kernel path that names nothing as a problem of its line (False:
      import nothing; the generated module still names the line when it fails).
    """

    namespace: str = "aten"
    kernels: str | None = None
    tags_file: Path | None = None
    module_name: str | None = None
    check_kernels: bool = True

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            lines = tuple(_option_problem(item) for item in error.errors(include_url=False))
            raise CodegenError("\n".join(lines), problems=lines) from None

    @field_validator("namespace", "module_name")
    @classmethod
    def _check_name(cls, value: str | None) -> str | None:
        if value is not None and not is_name(value):
            raise ValueError(
                f"{clip_repr(value)} is not a Python identifier. It becomes a Python name in the "
                "generated code. Use letters, digits and underscores, like 'mylib'."
            )
        return value

    @field_validator("kernels")
    @classmethod
    def _check_module(cls, value: str | None) -> str | None:
        if value is not None and not is_dotted_name(value):
            raise ValueError(
                f"{clip_repr(value)} is not a module path. The registration module imports it. "
                "Write a dotted module name, like 'mypkg.kernels'."
            )
        return value


def _option_problem(item: Any) -> str:
    field = ".".join(str(part) for part in item["loc"])
    cause = item.get("ctx", {}).get("error")
    detail = str(cause) if cause is not None else f"{clip_repr(item['input'])}: {item['msg']}."
    return f"GenOptions: {field}: {detail}"


class KernelPath(_Model):
    """Where a kernel lives: ``module`` to import and ``qualname`` inside it."""

    module: str
    qualname: str

    @classmethod
    def parse(cls, text: str, default_module: str | None) -> KernelPath | None:
        """``pkg.mod:fn`` or ``pkg.mod.fn``; a bare ``fn`` resolves against
        ``default_module`` (None when there is none). Raises `ValueError` on bad text.

        Args:
            text: the kernel's path as the YAML writes it.
            default_module: the module bare names live in (``--kernels``), or None.

        Returns:
            The path, or None for a bare name with no ``default_module``.

        Raises:
            ValueError: ``text`` is not a dotted path.
        """
        module, colon, qualname = text.partition(":")
        if not colon:
            module, _, qualname = text.rpartition(".")
        if not module and not colon and is_name(qualname):
            return None if default_module is None else cls(module=default_module, qualname=text)
        if not (is_dotted_name(module) and is_dotted_name(qualname)):
            raise ValueError(
                f"kernel {clip_repr(text)} is not a Python path. The registration module "
                "imports each "
                "kernel by its path. Write 'pkg.module:function' or 'pkg.module.function'."
            )
        return cls(module=module, qualname=qualname)

    @property
    def expression(self) -> str:
        """The kernel as a Python expression, once ``module`` is imported."""
        return f"{self.module}.{self.qualname}"

    def __str__(self) -> str:
        return f"{self.module}:{self.qualname}"


class CppKernel(_Model):
    """A kernel of a compiled C++ library: ``cpp:LIBRARY::NAME``.

    ``library`` is a path to the shared object (relative to the generated
    module's folder) or the dotted name of the extension module it was built
    as; ``name`` the op's name in its ``m.impl`` / ``m.def`` (``add``, ``add.out``).
    """

    library: str
    name: str

    #: What the generated module imports for it.
    module: ClassVar[str] = "customop.cpp"
    prefix: ClassVar[str] = "cpp:"

    @classmethod
    def parse(cls, text: str) -> CppKernel:
        """``cpp:LIBRARY::NAME``. Raises `ValueError` on bad text.

        Args:
            text: the kernel as the YAML writes it.

        Returns:
            The kernel.

        Raises:
            ValueError: ``text`` is not ``cpp:LIBRARY::NAME``.
        """
        library, sep, name = text.removeprefix(cls.prefix).rpartition("::")
        op, _, overload = name.partition(".")
        if not (sep and library.strip() and is_name(op) and (not overload or is_name(overload))):
            raise ValueError(
                f"kernel {clip_repr(text)} is not a C++ kernel path. A C++ kernel is named by "
                "its library and its op's name there. Write 'cpp:pkg._kernels::add' (an "
                "extension module's dotted name) or 'cpp:build/libmine.so::add' (a path "
                "from the generated module's folder)."
            )
        return cls(library=library, name=name)

    def __str__(self) -> str:
        return f"{self.prefix}{self.library}::{self.name}"


class KernelBinding(_Model):
    """One ``key: kernel`` line of an entry's ``dispatch``, for a key customop has.

    ``kernel`` is None for a bare name with no default module: listed as
    unbound in the report, not registered.
    """

    key: str
    kernel: KernelPath | CppKernel | None
    written: str
    line: int


class Declaration(_Model):
    """One validated entry of a declaration file: an operator overload.

    ``func`` is the schema with its namespace filled in. ``unused_fields`` and
    ``unused_keys`` are the PyTorch-only fields and dispatch keys the entry
    had; codegen accepted them and generates nothing for them.
    """

    func: FunctionSchema
    line: int
    variants: tuple[Variant, ...] = ("function",)
    dispatch: tuple[KernelBinding, ...] = ()
    tags: tuple[str, ...] = ()
    python_module: str | None = None
    unused_fields: tuple[str, ...] = ()
    unused_keys: tuple[str, ...] = ()

    @property
    def name(self) -> OperatorName:
        """The declared operator's name, from its ``func`` schema."""
        name = self.func.name
        if name is None:  # pragma: no cover - loading rejects funcs without a name
            raise RuntimeError(f"Declaration: func {self.func} has no operator name.")
        return name

    @property
    def namespace(self) -> str:
        """The declared operator's namespace."""
        return self.func.namespace

    @property
    def define_text(self) -> str:
        """The schema as ``Library(ns).define`` takes it: no namespace, source spelling."""
        return self.func.format("source").removeprefix(f"{self.namespace}::")


class Unused(_Model):
    """Something the file has that codegen did not act on: how often, and where first."""

    name: str
    count: int
    first_line: int


class CodegenReport(_Model):
    """What a declaration file held, and what codegen accepted but did not use."""

    path: str
    entries: int
    operators: int
    namespaces: tuple[str, ...]
    registrations: int
    unused_fields: tuple[Unused, ...] = ()
    unused_keys: tuple[Unused, ...] = ()
    unbound_kernels: Unused | None = None
    unchecked_kernels: tuple[Unused, ...] = ()

    def format(self) -> str:
        """The report as the ``customop gen`` command prints it.

        Returns:
            The report's text, one line per finding.
        """
        lines = [
            f"{self.path}: {plural(self.entries, 'entry', 'entries')}, "
            f"{plural(self.operators, 'operator')} in "
            f"{plural(len(self.namespaces), 'namespace')} ({', '.join(self.namespaces)}), "
            f"{plural(self.registrations, 'kernel registration')}."
        ]
        if self.unused_fields:
            lines.append("unused fields (PyTorch's C++ codegen reads them, customop does not):")
            lines += [self._item(item, "entry") for item in self.unused_fields]
        if self.unused_keys:
            lines.append("unused dispatch keys (customop has no such key; nothing registered):")
            lines += [self._item(item, "entry") for item in self.unused_keys]
        if self.unbound_kernels is not None:
            lines.append("unbound kernels (give --kernels MODULE to register them):")
            lines.append(self._item(self.unbound_kernels, "kernel"))
        if self.unchecked_kernels:
            lines.append("kernels not checked (their module cannot be found from here):")
            lines += [self._item(item, "kernel") for item in self.unchecked_kernels]
        return "\n".join(lines)

    def _item(self, item: Unused, noun: str) -> str:
        counted = plural(item.count, noun, "entries" if noun == "entry" else "")
        return f"  {item.name}: {counted}, first at {self.path}:{item.first_line}"


def tally(found: list[tuple[str, int]]) -> tuple[Unused, ...]:
    """``(name, line)`` pairs to one `Unused` per name, in order of first appearance."""
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for name, line in found:
        counts[name] = counts.get(name, 0) + 1
        first.setdefault(name, line)
    return tuple(Unused(name=n, count=counts[n], first_line=first[n]) for n in counts)


class DeclarationFile(_Model):
    """A whole declaration file, every entry validated, in file order."""

    path: str
    declarations: tuple[Declaration, ...]

    @property
    def namespaces(self) -> tuple[str, ...]:
        """Namespaces in order of first appearance."""
        return tuple(dict.fromkeys(d.namespace for d in self.declarations))

    def by_namespace(self) -> dict[str, list[Declaration]]:
        """The declarations of each namespace, both in file order.

        Returns:
            A dict from namespace to its declarations.
        """
        groups: dict[str, list[Declaration]] = {}
        for decl in self.declarations:
            groups.setdefault(decl.namespace, []).append(decl)
        return groups

    def report(self) -> CodegenReport:
        """What the file declares but codegen does not use.

        Returns:
            A ``CodegenReport`` listing unused fields, unused dispatch keys and
            kernels left unbound, each with its line in the file.
        """
        decls = self.declarations
        fields = [(name, d.line) for d in decls for name in d.unused_fields]
        keys = [(key, d.line) for d in decls for key in d.unused_keys]
        unbound = [(b.written, b.line) for d in decls for b in d.dispatch if b.kernel is None]
        return CodegenReport(
            path=self.path,
            entries=len(decls),
            operators=len({d.name.qualified_name for d in decls}),
            namespaces=self.namespaces,
            registrations=sum(b.kernel is not None for d in decls for b in d.dispatch),
            unused_fields=tally(fields),
            unused_keys=tally(keys),
            unbound_kernels=(
                Unused(name="bare names", count=len(unbound), first_line=unbound[0][1])
                if unbound
                else None
            ),
        )

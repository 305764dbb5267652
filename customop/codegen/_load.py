"""``load_declarations``: a YAML file to validated `Declaration`s, or every problem at once.

Each problem is one line, ``<file>:<line>: entry '<func>': <what>. <why>. <fix>``,
so editors can jump to it. All entries are checked before anything is raised.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from customop.codegen._entry import Entry, EntryContext, did_you_mean, split_keys
from customop.codegen._model import Declaration, DeclarationFile, GenOptions, KernelBinding
from customop.codegen._names import RESERVED_OP_NAMES, python_name
from customop.codegen._stubs import STUB_HELPERS
from customop.codegen._tables import (
    BUILTIN_TAGS,
    CUSTOMOP_KEYS,
    FIELD_EXAMPLES,
    TORCH_ONLY_FIELDS,
    USED_FIELDS,
)
from customop.codegen._yaml import LinedDict, LinedList, line_of, load_tags, read_yaml
from customop.exceptions import CodegenError
from customop.schema import clip, clip_repr

__all__ = ["load_declarations", "raise_problems"]


#: How many problems a `CodegenError` message lists, and how long each line may be.
MAX_LISTED = 100
MAX_LINE = 1000


class _Problems:
    """Problems of one file, each formatted ``<file>:<line>: <subject>: <message>``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.found: list[tuple[int, str]] = []

    def add(self, line: int, subject: str, message: str) -> None:
        self.found.append((line, f"{self.path}:{line}: {subject}: {message}"))

    def raise_if_any(self) -> None:
        """Raise the problems found so far (see `raise_problems`)."""
        raise_problems(self.found)


def raise_problems(found: list[tuple[int, str]]) -> None:
    """Raise `CodegenError` for ``(line, text)`` problems, in line order (stable within a line).

    The message lists the first `MAX_LISTED` (``problems`` has them all), each
    line clipped, so that a huge or hostile file gives a message of bounded size.

    Args:
        found: the problems, each with its line; nothing is raised when empty.

    Raises:
        CodegenError: there are problems.
    """
    if found:
        ordered = sorted(found, key=lambda problem: problem[0])
        lines = tuple(clip(text, MAX_LINE) for _, text in ordered)
        shown = list(lines[:MAX_LISTED])
        if len(lines) > MAX_LISTED:
            shown.append(
                f"... and {len(lines) - MAX_LISTED} more problems (CodegenError.problems "
                "lists them all). Fix the ones above first."
            )
        raise CodegenError("\n".join(shown), problems=lines)


def _context(options: GenOptions) -> EntryContext:
    if options.tags_file is None:
        return EntryContext(options.namespace, options.kernels, BUILTIN_TAGS, "the built-in tags")
    tags = load_tags(options.tags_file)
    return EntryContext(options.namespace, options.kernels, tags, str(options.tags_file))


def _subject(raw: Any, index: int) -> str:
    func = raw.get("func") if isinstance(raw, dict) else None
    return f"entry {clip_repr(func)}" if isinstance(func, str) else f"entry #{index + 1} (no func)"


def _pydantic_message(item: Any) -> str:
    loc = item["loc"]
    field = str(loc[0]) if loc else ""
    cause = item.get("ctx", {}).get("error")
    if cause is not None:
        return str(cause)
    if item["type"] == "extra_forbidden":
        fix = did_you_mean(field, (*USED_FIELDS, *TORCH_ONLY_FIELDS)) or (
            f"Remove it; the fields customop uses are {', '.join(USED_FIELDS)}."
        )
        return (
            f"unknown field {clip_repr(field)}. It is not a native_functions.yaml field, so it "
            "would be "
            f"lost silently. {fix}"
        )
    example = FIELD_EXAMPLES.get(field, "in native_functions.yaml")
    if item["type"] == "missing":
        return (
            f"field {clip_repr(field)} is missing. Every entry declares an operator. Add {example}."
        )
    where = ".".join(str(part) for part in loc)
    return f"{where} is {clip_repr(item['input'])}: {item['msg']}. Write it like {example}."


def _duplicates(raw: LinedDict, problems: _Problems, subject: str) -> None:
    """YAML keeps the last of two equal keys silently; a declaration file should not."""
    mappings = [("field", raw)]
    if isinstance(raw.get("dispatch"), LinedDict):
        mappings.append(("dispatch key", raw["dispatch"]))
    for what, mapping in mappings:
        for key, line in mapping.duplicates:
            problems.add(
                line,
                subject,
                f"{what} {clip_repr(key)} appears twice (first at line {mapping.key_lines[key]}). "
                "YAML keeps only the last one, so the first would be lost. Remove one.",
            )


def _bindings(
    entry: Entry, raw: LinedDict, problems: _Problems, subject: str
) -> tuple[list[KernelBinding], list[str]]:
    """The entry's kernels for customop keys, and the PyTorch-only keys it names."""
    bindings: dict[str, KernelBinding] = {}
    unused: list[str] = []
    for group, kernel in entry.dispatch.items():
        line = line_of(raw, ("dispatch", group), raw.line)
        written = str(raw["dispatch"][group])
        for key in split_keys(group):
            if key not in CUSTOMOP_KEYS:
                unused.append(key)
            elif key in bindings:
                problems.add(
                    line,
                    subject,
                    f"dispatch key {clip_repr(key)} has two kernels "
                    f"({clip_repr(bindings[key].written)} and "
                    f"{clip_repr(written)}). A key runs one kernel per operator. Remove one.",
                )
            else:
                bindings[key] = KernelBinding(key=key, kernel=kernel, written=written, line=line)
    return list(bindings.values()), unused


class _NameCheck:
    """Each operator is declared once, and each gets a distinct, usable Python name."""

    def __init__(self, problems: _Problems) -> None:
        self.problems = problems
        self.lines: dict[str, int] = {}
        # Python name -> the schema name that took it, per scope (module, namespace, packet).
        self.taken: dict[tuple[str, ...], str] = {
            ("unregister",): "the unregister() function",
            ("_kernel",): "the generated module's _kernel() helper",
        }

    def check(self, decl: Declaration, subject: str) -> bool:
        """False, with a problem, when the operator was declared before."""
        name, line = decl.name, decl.line
        if str(name) in self.lines:
            self.problems.add(
                line,
                subject,
                f"operator {clip_repr(str(name))} is declared twice (first at line "
                f"{self.lines[str(name)]})"
                ". A name and overload name one operator. Rename one overload or drop one entry.",
            )
            return False
        self.lines[str(name)] = line
        if name.name in RESERVED_OP_NAMES:
            self.problems.add(
                line,
                subject,
                f"operator name {clip_repr(name.name)} is an attribute of every Python object, so "
                f"ops.{name.namespace}.{name.name} could not reach the operator. Rename it.",
            )
        overload = name.overload or "default"
        for scope, written in (((), name.namespace), ((name.namespace,), name.name)):
            self._distinct(scope, written, line, subject)
        self._distinct((name.namespace, name.name), overload, line, subject)
        return True

    def _distinct(self, scope: tuple[str, ...], written: str, line: int, subject: str) -> None:
        attribute = python_name(written)
        if attribute in STUB_HELPERS:
            self.problems.add(
                line,
                subject,
                f"name {clip_repr(written)} is one the typed stub uses for its own helpers, so the "
                "stub could not describe it. Rename it.",
            )
        first = self.taken.setdefault((*scope, attribute), written)
        if first != written:
            self.problems.add(
                line,
                subject,
                f"{clip_repr(written)} and {clip_repr(first)} both become the Python name "
                f"{clip_repr(attribute)} "
                "(keywords get a trailing '_'). Rename one of them.",
            )


def _kind(value: Any) -> str:
    """What a YAML value is, in YAML's words (never a Python class name)."""
    if value is None:
        return "empty"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {clip_repr(value, 40)}"
    if isinstance(value, bool | int | float):
        return f"the {type(value).__name__} {clip_repr(value, 40)}"
    return "a scalar"


def _declaration(
    raw: Any, index: int, line: int, context: EntryContext, names: _NameCheck
) -> Declaration | None:
    problems, subject = names.problems, _subject(raw, index)
    if not isinstance(raw, LinedDict):
        problems.add(
            line,
            subject,
            f"the entry is {_kind(raw)}, not a mapping. Each entry maps field names "
            "to values. Write it as '- func: ...' with further fields indented below.",
        )
        return None
    _duplicates(raw, problems, subject)
    try:
        entry = Entry.model_validate(raw, context=context)
    except ValidationError as error:
        for item in error.errors(include_url=False):
            problems.add(line_of(raw, item["loc"], raw.line), subject, _pydantic_message(item))
        return None
    bindings, unused_keys = _bindings(entry, raw, problems, subject)
    decl = Declaration(
        func=entry.func,
        line=raw.line,
        variants=entry.variants,
        dispatch=tuple(bindings),
        tags=entry.tags,
        python_module=entry.python_module,
        unused_fields=tuple(key for key in raw if key in TORCH_ONLY_FIELDS),
        unused_keys=tuple(unused_keys),
    )
    return decl if names.check(decl, subject) else None


def load_declarations(path: str | Path, options: GenOptions | None = None) -> DeclarationFile:
    """Read and validate a declaration file (the native_functions.yaml format).

    Raises `CodegenError` listing every problem of the file, one per line,
    each with the file, the line and the entry's func.

    Args:
        path: the declaration file.
        options: namespace, kernels module, tags file and module name.

    Returns:
        The validated declarations.

    Raises:
        CodegenError: the file has problems.
    """
    path, options = Path(path), options or GenOptions()
    data = read_yaml(path)
    problems = _Problems(path)
    if data is not None and not isinstance(data, LinedList):
        problems.add(
            getattr(data, "line", 1),
            "file",
            "the file is not a list of entries. A declaration file lists one mapping per "
            "operator. Start each entry with '- func: ...'.",
        )
        problems.raise_if_any()
    context, names = _context(options), _NameCheck(problems)
    if not data:
        problems.add(
            1,
            "file",
            "the file declares no operators (it has no entries). A declaration "
            "file lists one mapping per operator; an empty one would generate an empty "
            "module. Add an entry such as '- func: mylib::add(Tensor x, Tensor y) -> Tensor'.",
        )
        problems.raise_if_any()
    entries = data or LinedList()
    decls = [
        _declaration(raw, index, entries.item_lines[index], context, names)
        for index, raw in enumerate(entries)
    ]
    problems.raise_if_any()
    return DeclarationFile(path=str(path), declarations=tuple(d for d in decls if d is not None))

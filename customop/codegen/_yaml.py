"""Reading a declaration file: YAML to plain data that remembers its line numbers.

PyYAML is an optional dependency (the ``codegen`` extra): it is imported
here, on first use, never when customop is imported. libyaml's C loader is
used when PyYAML was built with it; it reads PyTorch's native_functions.yaml
about 7x faster than the pure-Python loader.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Final, NoReturn

from customop.exceptions import CodegenError
from customop.schema import clip

__all__ = ["MAX_EXPANSION", "LinedDict", "LinedList", "line_of", "load_tags", "read_yaml"]

_INSTALL_HINT = 'pip install "customop[codegen]"'
#: How many values per character of text a file may expand to through aliases.
MAX_EXPANSION: Final = 4


class LinedDict(dict[Any, Any]):
    """A YAML mapping that knows the 1-based line of itself and of each key.

    ``duplicates`` lists ``(key, line)`` for keys written twice: YAML keeps the
    last one silently, and a declaration file should not.
    """

    line: int
    key_lines: dict[Any, int]
    duplicates: list[tuple[Any, int]]


class LinedList(list[Any]):
    """A YAML sequence that knows the 1-based line of each item."""

    item_lines: list[int]


def line_of(data: Any, loc: tuple[Any, ...], default: int) -> int:
    """The line of the deepest part of ``loc`` (a pydantic error location) found in ``data``."""
    line = default
    for part in loc:
        if isinstance(data, LinedDict) and part in data.key_lines:
            line = data.key_lines[part]
        elif isinstance(data, LinedList) and isinstance(part, int) and 0 <= part < len(data):
            line = data.item_lines[part]
        else:
            break
        data = data[part]
    return line


def _yaml() -> Any:
    try:
        import yaml  # noqa: PLC0415  (an optional dependency: imported on first use)
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "customop gen: PyYAML is not installed. Reading declaration files needs it, "
            f"and it is an optional dependency of customop. Install it: {_INSTALL_HINT}",
            name="yaml",
        ) from None
    return yaml


def _construct_map(loader: Any, node: Any) -> Any:
    # A generator, like PyYAML's own map constructor, so that anchors and
    # recursive references resolve to this very object.
    mapping = LinedDict()
    yield mapping
    mapping.update(loader.construct_mapping(node))
    mapping.line = node.start_mark.line + 1
    mapping.key_lines, mapping.duplicates = {}, []
    for key_node, _ in node.value:
        # A plain string key is its scalar text: no need to construct it again.
        is_str = key_node.tag == "tag:yaml.org,2002:str"
        key = key_node.value if is_str else loader.construct_object(key_node)
        line = key_node.start_mark.line + 1
        if key in mapping.key_lines:
            mapping.duplicates.append((key, line))
        else:
            mapping.key_lines[key] = line


def _construct_seq(loader: Any, node: Any) -> Any:
    sequence = LinedList()
    yield sequence
    sequence.extend(loader.construct_sequence(node))
    sequence.item_lines = [item.start_mark.line + 1 for item in node.value]


@functools.cache
def _loader() -> Any:
    yaml = _yaml()
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader: Any = type("LineLoader", (base,), {})
    loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
    loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)
    return loader


def _fail(path: Path, line: int, problem: str, fix: str) -> NoReturn:
    message = f"{clip(str(path))}:{line}: {problem}. {fix}"
    raise CodegenError(message, problems=(message,))


def _decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        _fail(
            path,
            line,
            f"the file is not UTF-8 text (byte {data[error.start]:#04x} at offset {error.start})",
            "Declaration files are UTF-8, as YAML is. Save the file as UTF-8.",
        )


def _size(data: Any, limit: int) -> int:
    """How many values ``data`` holds with every alias expanded, counting up to ``limit``."""
    count, stack = 0, [data]
    while stack and count <= limit:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


def read_yaml(path: Path) -> Any:
    """The data of the YAML file at ``path``, mappings as `LinedDict`.

    Bad text (not UTF-8, control characters, a syntax error) raises
    `CodegenError` naming the file and line. So does a file whose aliases
    (``*name``) expand it past `MAX_EXPANSION` times its size: an "alias bomb"
    of a few hundred bytes would otherwise expand to gigabytes wherever the
    data is walked or quoted.
    """
    yaml = _yaml()
    try:
        text = _decode(path, path.read_bytes())
        data = yaml.load(text, Loader=_loader())
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else 1
        fix = "Fix the YAML syntax; each entry is a mapping under '- ', like '- func: ...'."
        _fail(path, line, f"the file is not valid YAML: {clip(str(error.problem or error))}", fix)
    except yaml.YAMLError as error:  # ReaderError: a character YAML does not allow, like NUL
        position = getattr(error, "position", 0)
        line = text.count("\n", 0, position) + 1
        character = getattr(error, "character", None)
        what = f"the character U+{character:04X}" if isinstance(character, int) else "a character"
        _fail(
            path,
            line,
            f"the file holds {what}, which YAML does not allow",
            "YAML text cannot hold control characters such as NUL. Remove it.",
        )
    limit = MAX_EXPANSION * len(text) + 10_000
    if _size(data, limit) > limit:
        _fail(
            path,
            1,
            f"the file's aliases (*name) expand it to more than {limit:,} values",
            "An alias repeats the value its anchor (&name) marks, and these repeat it so often "
            "that reading the file would not end. Write the values out, or use fewer aliases.",
        )
    return data


def load_tags(path: str | Path) -> frozenset[str]:
    """The tag names of a tags file in torch's ``tags.yaml`` format (``- tag: name``).

    Args:
        path: the tags file.

    Returns:
        The tag names.
    """
    path = Path(path)
    data = read_yaml(path)
    entries = data if isinstance(data, list) else []
    tags = [e.get("tag") for e in entries if isinstance(e, dict)]
    names = [tag for tag in tags if isinstance(tag, str)]
    if not names or len(names) != len(entries):
        message = (
            f"{path}: not a tags file. Tags are checked against it, so it must list them. "
            "Write one '- tag: name' mapping per tag, as in torch's tags.yaml."
        )
        raise CodegenError(message, problems=(message,))
    return frozenset(names)

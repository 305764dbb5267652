"""Reading a declaration file: YAML to plain data that remembers its line numbers.

PyYAML is an optional dependency (the ``codegen`` extra): it is imported
here, on first use, never when customop is imported. libyaml's C loader is
used when PyYAML was built with it; it reads PyTorch's native_functions.yaml
about 7x faster than the pure-Python loader.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from customop.exceptions import CodegenError

__all__ = ["LinedDict", "LinedList", "line_of", "load_tags", "read_yaml"]

_INSTALL_HINT = 'pip install "customop[codegen]"'


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


def read_yaml(path: Path) -> Any:
    """The data of the YAML file at ``path``, mappings as `LinedDict`.

    A syntax error raises `CodegenError` naming the file and line.
    """
    yaml = _yaml()
    text = path.read_text(encoding="utf-8")
    try:
        return yaml.load(text, Loader=_loader())
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = f"{path}:{line}: the file is not valid YAML: {error.problem or error}. "
        fix = "Fix the YAML syntax; each entry is a mapping under '- ', like '- func: ...'."
        raise CodegenError(problem + fix, problems=(problem + fix,)) from None


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

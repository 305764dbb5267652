"""Hostile input to `customop gen`: text from the YAML file never runs as code.

A file name and string defaults holding quotes, triple quotes, newlines and
line separators reach the generated module's header comment, docstrings and
string literals. Generating, importing and type-checking must treat them as
text: the payloads below would set ``builtins.PWNED`` if any of them ran.
"""

from __future__ import annotations

import builtins
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import customop
from customop.codegen import GenOptions, generate
from customop.codegen._render import py_string

MODULE = "hostile_ops_gen"
PAYLOAD = "__import__('builtins').__setattr__('PWNED', 1)"
# Closes a triple-quoted docstring, then a comment line, in every way a file name can.
FILE_NAME = f"""x\"\"\"+{PAYLOAD}+\"\"\"'''+{PAYLOAD}+'''\n{PAYLOAD}\u2028{PAYLOAD}#.yaml"""
DEFAULTS = {
    "triple_single": f"'''+{PAYLOAD}+'''",
    "triple_double": f'"""+{PAYLOAD}+"""',
    "newline": f"\n{PAYLOAD}\n",
    "separator": f"\u2028{PAYLOAD}\u2029",
    "backslash": "\\",
    "emoji": "\U0001f600 \u00e9",
}


def _escaped(text: str) -> str:
    """``text`` as a C-escaped schema string literal (octal for bytes outside ASCII)."""
    out = []
    for byte in text.encode():
        char = chr(byte)
        out.append(char if 0x20 <= byte < 0x7F and char not in "\\'\"" else f"\\{byte:03o}")
    return "'" + "".join(out) + "'"


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    lines = [
        f'- func: "hostile::{name}(str s={_escaped(text)}) -> ()"'.replace("\\", "\\\\")
        for name, text in DEFAULTS.items()
    ]
    path = tmp_path / FILE_NAME
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    generate(path, out, GenOptions(module_name=MODULE))
    monkeypatch.syspath_prepend(str(out))
    yield out
    module = sys.modules.pop(MODULE, None)
    if module is not None:
        module.unregister()


def test_generated_module_runs_no_payload(hostile: Path) -> None:
    assert not hasattr(builtins, "PWNED")
    module = importlib.import_module(MODULE)
    assert not hasattr(builtins, "PWNED")
    for name, text in DEFAULTS.items():
        schema = getattr(customop.ops.hostile, name).default.schema
        assert schema.arguments[0].default is not None
        assert schema.arguments[0].default.value == text, name
    assert module.unregister is not None


@pytest.mark.parametrize("suffix", ["py", "pyi"])
def test_generated_files_keep_text_in_comments_and_strings(hostile: Path, suffix: str) -> None:
    source = (hostile / f"{MODULE}.{suffix}").read_text(encoding="utf-8")
    compile(source, f"{MODULE}.{suffix}", "exec")  # the stub is valid Python too
    # Every line of the file name and of the defaults stays inside one escaped line.
    assert "\u2028" not in source
    assert "\u2029" not in source
    assert not any(line.startswith(PAYLOAD) for line in source.splitlines())


@pytest.mark.parametrize(
    "text",
    ["", "plain", "\U0001f600", "a\u2028b", "\ud83d", '"""', "'''", "\\", "\x00\x7f\x85", "é"],
    ids=["empty", "plain", "emoji", "separator", "surrogate", "dq3", "sq3", "bs", "ctl", "e"],
)
def test_py_string_is_one_line_literal_of_the_text(text: str) -> None:
    literal = py_string(text)
    assert literal.isprintable()
    assert eval(literal) == text

"""Hostile declaration files (issue #11 §1, §4, §5): `CodegenError`, bounded, in YAML's words.

An alias bomb, bytes that are not UTF-8, a NUL byte, huge values and
thousands of bad entries each give a `CodegenError` of bounded size, never a
decoding or reader error and never a message that grows with the input.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from customop.codegen import load_declarations
from customop.codegen._load import MAX_LINE, MAX_LISTED
from customop.exceptions import CodegenError

BOMB = """\
- &a func: "lol"
  x: &b ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
- c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
- d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
- e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
- f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
- g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
- h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
- func: [*h,*h,*h,*h,*h,*h,*h,*h,*h]
  tags: [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def _error(path: Path) -> CodegenError:
    with pytest.raises(CodegenError) as caught:
        load_declarations(path)
    return caught.value


def test_an_alias_bomb_is_refused_before_it_expands(yaml_file: Callable[..., Path]) -> None:
    error = _error(yaml_file(BOMB))
    assert "aliases (*name) expand it" in str(error)
    assert len(str(error)) < 500


def test_a_few_aliases_are_fine(yaml_file: Callable[..., Path]) -> None:
    path = yaml_file(
        """
        - func: mylib::a(Tensor x) -> Tensor
          tags: &t [pointwise, core]
        - func: mylib::b(Tensor x) -> Tensor
          tags: *t
        """
    )
    assert [d.tags for d in load_declarations(path).declarations] == [("pointwise", "core")] * 2


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b'- func: "a::b() -> ()"\x00\n', "1: the file holds the character U+0000"),
        (b'- func: "a::b() -> ()"\n- func: "\xff"\n', "2: the file is not UTF-8 text (byte 0xff"),
        (b"\x07- func: x\n", "1: the file holds the character U+0007"),
    ],
    ids=["nul", "latin-1", "bell"],
)
def test_bad_bytes_are_a_codegen_error(tmp_path: Path, data: bytes, problem: str) -> None:
    path = tmp_path / "ops.yaml"
    path.write_bytes(data)
    error = _error(path)
    assert str(error).startswith(f"{path}:{problem}")
    assert error.problems == (str(error),)


def test_huge_values_are_quoted_clipped(yaml_file: Callable[..., Path]) -> None:
    huge = "x" * 1_000_000
    # `? key` is YAML's long form of a key (plain keys stop at 1024 characters)
    path = yaml_file(f"- func: {huge}\n  ? {huge}\n  : 1\n  dispatch: {{CPU: [{huge}]}}\n")
    error = _error(path)
    assert "more characters" in str(error)
    assert all(len(line) <= MAX_LINE + 100 for line in str(error).splitlines())
    assert len(str(error)) < 5000


def test_thousands_of_bad_entries_list_a_bounded_number(yaml_file: Callable[..., Path]) -> None:
    path = yaml_file("".join(f"- func: bad{i}\n" for i in range(3000)))
    error = _error(path)
    assert len(error.problems) == 3000
    lines = str(error).splitlines()
    assert len(lines) <= MAX_LISTED * 4 + 1  # a schema error shows its line and caret
    assert lines[-1].startswith(f"... and {3000 - MAX_LISTED} more problems")


@pytest.mark.parametrize(
    ("entry", "kind"),
    [("- [1, 2]", "a list"), ("- 12", "the int 12"), ("- ", "empty"), ("- hi", "the string 'hi'")],
    ids=["list", "int", "empty", "str"],
)
def test_an_entry_that_is_no_mapping_is_named_in_yaml_words(
    yaml_file: Callable[..., Path], entry: str, kind: str
) -> None:
    message = str(_error(yaml_file(entry + "\n")))
    assert f"the entry is {kind}, not a mapping" in message
    assert "Lined" not in message

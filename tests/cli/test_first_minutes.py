"""What a new user meets first: --version, help, typos, missing files, broken modules.

Every error is one bounded line on stderr (``--debug`` shows the traceback),
whatever the input, and registration sources name the user's file and line
under every launcher.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import customop

ROOT = Path(__file__).parent.parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "customop", *args],
        capture_output=True, text=True, cwd=cwd, check=False, timeout=120, env=ENV,
    )  # fmt: skip


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("customop: error: ")
    return lines[0]


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout == f"customop {customop.__version__}\n"


@pytest.mark.parametrize(
    ("command", "sentence"),
    [
        ("demo", "Run customop's main job on built-in examples"),
        ("dump", "List the operators registered on customop's process-wide dispatcher"),
        ("infer", "print the schema its type hints give"),
    ],
    ids=["demo", "dump", "infer"],
)
def test_help_describes_the_command(command: str, sentence: str) -> None:
    result = run(command, "--help")
    assert result.returncode == 0
    assert sentence in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    ("typed", "suggestion"),
    [("dmo", "Did you mean 'demo'?"), ("dupm", "Did you mean 'dump'?"), ("zzz", "Commands:")],
    ids=["demo", "dump", "no-match"],
)
def test_mistyped_command_gets_did_you_mean(typed: str, suggestion: str) -> None:
    result = run(typed)
    assert result.returncode == 2
    assert f"customop: error: unknown command {typed!r}. " in result.stderr
    assert suggestion in result.stderr


def test_gen_missing_file_is_a_sentence(tmp_path: Path) -> None:
    line = one_line_error(run("gen", "missing.yaml", "--out", "out", cwd=tmp_path))
    assert "Errno" not in line
    assert "the declaration file 'missing.yaml' does not exist" in line


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'- func: "a\x00b"\n', "the file holds the character U+0000, which YAML does not allow"),
        (b"\xff\xfe- func: x\n", "the file is not UTF-8 text (byte 0xff at offset 0)"),
    ],
    ids=["nul-byte", "not-utf8"],
)
def test_unreadable_yaml_is_one_line(tmp_path: Path, content: bytes, expected: str) -> None:
    (tmp_path / "ops.yaml").write_bytes(content)
    line = one_line_error(run("gen", "ops.yaml", "--out", "out", cwd=tmp_path))
    assert expected in line
    debug = run("--debug", "gen", "ops.yaml", "--out", "out", cwd=tmp_path)
    assert "Traceback" in debug.stderr


BROKEN = {
    "syntax": ("x = (\n", "cannot import module 'broken': syntax error at broken.py:1"),
    "raises": (
        "import math\nmath.sqrt(-1)\n",
        "importing module 'broken' raised ValueError at broken.py:2: math domain error",
    ),
    "missing-import": (
        "import nosuchpackage_xyz\n",
        "importing module 'broken' raised ModuleNotFoundError at broken.py:1",
    ),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
@pytest.mark.parametrize(
    "command", [("infer", "broken:f"), ("dump", "--module", "broken")], ids=["infer", "dump"]
)
def test_broken_user_module_is_one_line(tmp_path: Path, kind: str, command: tuple[str]) -> None:
    source, expected = BROKEN[kind]
    (tmp_path / "broken.py").write_text(source)
    line = one_line_error(run(*command, cwd=tmp_path))
    assert expected in line
    assert "--debug" in line
    if kind == "raises":  # one case is enough to show --debug keeps the traceback
        assert "Traceback" in run("--debug", *command, cwd=tmp_path).stderr


def test_dump_module_without_ops_says_why(tmp_path: Path) -> None:
    (tmp_path / "noops.py").write_text("import numpy\n")
    result = run("dump", "--module", "noops", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith(
        "no operators: importing 'noops' registered none on customop's process-wide dispatcher."
    )
    assert "if __name__ == '__main__':" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("schema", "ns::op(" + "int a, " * 15_000 + "int b) -> Tensor"),
        ("infer", "x" * 100_000 + ":f"),
        ("x" * 100_000,),
    ],
    ids=["schema-100KB", "infer-100KB-name", "command-100KB"],
)
def test_error_output_is_bounded(tmp_path: Path, args: tuple[str, ...]) -> None:
    # (An argument is at most 128 KB on Linux; files go bigger, below.)
    result = run(*args, cwd=tmp_path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert len(result.stderr) < 2_000, result.stderr[:500]


@pytest.mark.slow  # writes and reads 10 MB: ~5 s alone, more on a busy machine
def test_error_output_for_a_10mb_yaml_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "big.yaml").write_text("- func: " + "x" * 10_000_000 + "\n")
    result = run("gen", "big.yaml", "--out", "out", cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert len(result.stderr) < 2_000, result.stderr[:500]


def test_demo_prints_the_diagram_without_a_fence() -> None:
    result = run("demo")
    assert result.returncode == 0, result.stderr
    assert "```" not in result.stdout
    section = result.stdout.split("# 6. The graph as a Mermaid diagram")[1]
    assert "Paste the lines below into https://mermaid.live" in section
    assert "\nflowchart TD\n" in section


# Registration sources under every launcher -----------------------------------

USER_OPS = textwrap.dedent(
    """\
    import customop

    lib = customop.Library("srcs", "DEF")
    handle = lib.define("f(Tensor x) -> Tensor")
    print("source:", handle.source)
    """
)
PIP_LAUNCHER = textwrap.dedent(
    """\
    import re
    import sys
    from customop.cli import main
    if __name__ == "__main__":
        sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
        sys.exit(main())
    """
)


def _python(*args: str, cwd: Path) -> str:
    result = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=ENV, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(
    "launch",
    [
        ("userops.py",),
        ("-m", "userops"),
        ("-c", "import runpy; runpy.run_path('userops.py', run_name='__main__')"),
        ("-c", "import runpy; runpy.run_module('userops', run_name='__main__')"),
    ],
    ids=["script", "python-m", "runpy.run_path", "runpy.run_module"],
)
def test_source_names_the_users_file(tmp_path: Path, launch: tuple[str, ...]) -> None:
    (tmp_path / "userops.py").write_text(USER_OPS)
    assert _python(*launch, cwd=tmp_path) == "source: userops.py:4\n"


@pytest.mark.parametrize("launcher", ["python-m", "console-script"])
def test_demo_sources_name_the_demo_module(tmp_path: Path, launcher: str) -> None:
    if launcher == "console-script":
        (tmp_path / "customop").write_text(PIP_LAUNCHER)
        out = _python(str(tmp_path / "customop"), "demo", cwd=tmp_path)
    else:
        out = _python("-m", "customop", "demo", cwd=tmp_path)
    table = out.split("# 3.")[1].split("# 4.")[0]
    assert "linear at customop/cli/_demo.py:" in table
    assert "_linear at customop/cli/_demo.py:" in table
    assert "runpy" not in table
    assert "customop:" not in table.replace("customop/cli", "")

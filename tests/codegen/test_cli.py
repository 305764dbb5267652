"""``customop gen`` through a subprocess, as users run it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.codegen.conftest import ROOT, TAGS

YamlFile = Callable[..., Path]


def customop(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "customop", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


def test_gen_writes_both_files_and_prints_the_report(tmp_path: Path) -> None:
    done = customop("gen", "examples/ops.yaml", "--out", str(tmp_path / "gen"), "--tags", str(TAGS))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"wrote {tmp_path / 'gen' / 'ops.py'}",
        f"wrote {tmp_path / 'gen' / 'ops.pyi'}",
        "examples/ops.yaml: 6 entries, 5 operators in 1 namespace (mylib), 6 kernel registrations.",
    ]
    assert (tmp_path / "gen" / "ops.py").exists() and (tmp_path / "gen" / "ops.pyi").exists()


def test_gen_options(tmp_path: Path, yaml_file: YamlFile) -> None:
    path = yaml_file("- func: f(Tensor x) -> Tensor\n  dispatch:\n    CPU: f_cpu\n")
    args = ["gen", str(path), "--out", str(tmp_path), "--name", "mine", "--quiet"]
    done = customop(*args, "--namespace", "lib", "--kernels", "lib_kernels")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"wrote {tmp_path / 'mine.py'}",
        f"wrote {tmp_path / 'mine.pyi'}",
    ]
    module = (tmp_path / "mine.py").read_text()
    assert '_impl_lib_CPU.impl("f", _kernel("lib_kernels", "f_cpu", "ops.yaml:3"))' in module
    assert "lib = _customop.ops.lib" in module


def test_gen_errors_are_lines_without_traceback(tmp_path: Path, yaml_file: YamlFile) -> None:
    path = yaml_file("- func: f(Tensor x) -> Tensor\n  dispach: {}\n- func: g(Tensr x) -> Tensor\n")
    done = customop("gen", str(path), "--out", str(tmp_path / "out"))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"customop: error: {path}:2: entry 'f(Tensor x) -> Tensor': unknown field 'dispach'. It "
        "is not a native_functions.yaml field, so it would be lost silently. Did you mean "
        "'dispatch'?",
        f"{path}:3: entry 'g(Tensr x) -> Tensor': func is not a valid schema: unknown type "
        "specifier 'Tensr' at column 2. Did you mean 'Tensor'?",
    ]
    assert not (tmp_path / "out").exists()
    debug = customop("--debug", "gen", str(path), "--out", str(tmp_path / "out"))
    assert "Traceback" in debug.stderr and "CodegenError" in debug.stderr


def test_gen_missing_file(tmp_path: Path) -> None:
    done = customop("gen", str(tmp_path / "nope.yaml"), "--out", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr == (
        f"customop: error: gen: the declaration file {str(tmp_path / 'nope.yaml')!r} does "
        "not exist. The command reads the ops to generate from it. Check the path.\n"
    )
    assert "Traceback" not in done.stderr


def test_gen_help_and_the_schema_command_still_work() -> None:
    done = customop("gen", "--help")
    assert done.returncode == 0
    assert "usage: customop gen [-h] --out DIR" in done.stdout
    schema = customop("schema", "mylib::f(Tensor x) -> Tensor")
    assert schema.returncode == 0 and schema.stdout.startswith("mylib::f(Tensor x) -> Tensor")

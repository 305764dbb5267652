"""The command line, run as a user would: in a subprocess."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "customop", *args],
        capture_output=True, text=True, cwd=cwd, check=False, timeout=120,
    )  # fmt: skip


@pytest.fixture
def user_module(tmp_path: Path) -> Path:
    (tmp_path / "userops.py").write_text(
        textwrap.dedent(
            """
            import numpy as np
            import customop

            @customop.custom_op("userops::scale", mutates_args=(), device_types="cpu")
            def scale(x: np.ndarray, factor: float = 2.0) -> np.ndarray:
                return x * factor

            def fill_(out: np.ndarray, value: float) -> None:
                out[...] = value
            """
        )
    )
    return tmp_path


def test_schema_explains_each_argument() -> None:
    result = run("schema", "mylib::scale_(Tensor(a!) x, *, float alpha=1.0) -> Tensor(a!)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:8] == [
        "mylib::scale_(Tensor(a!) x, *, float alpha=1.) -> Tensor(a!)",
        "",
        "operator:  mylib::scale_",
        "overload:  (default)",
        "kind:      mutable (writes its inputs)",
        "arguments (2):",
        "  x: Tensor(a!)  [mutated by the op, dispatches on it (tensor)]",
        "  alpha: float  [keyword-only, default 1.0]",
    ]


def test_schema_source_style() -> None:
    result = run("schema", "--style", "source", "aten::f(Tensor x, int reduction=Mean) -> Tensor")
    assert result.stdout.splitlines()[0] == "aten::f(Tensor x, int reduction=Mean) -> Tensor"


def test_errors_are_one_line_and_exit_nonzero() -> None:
    result = run("schema", "mylib::f(Tensor x, double y) -> Tensor")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "customop: error: parse_schema: unknown type specifier 'double' at column 19. In a schema, "
        "'float' is already double precision (a C++ double). Use `float`.",
        "    mylib::f(Tensor x, double y) -> Tensor",
        "                       ^",
    ]
    assert "Traceback" not in result.stderr


def test_debug_shows_the_traceback() -> None:
    result = run("--debug", "schema", "mylib::f(Tensor x")
    assert result.returncode != 0
    assert "Traceback" in result.stderr


def test_infer(user_module: Path) -> None:
    result = run(
        "infer", "userops:fill_", "--mutates", "out", "--name", "userops::fill_", cwd=user_module
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "userops::fill_(Tensor(a0!) out, float value) -> ()"
    custom = run("infer", "userops:scale", cwd=user_module)
    assert custom.stdout.splitlines()[0] == "(Tensor x, float factor=2.) -> Tensor"


def test_infer_bad_target(user_module: Path) -> None:
    result = run("infer", "userops:nope", cwd=user_module)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "customop: error: infer: module 'userops' has no attribute 'nope'. The function must "
        "be reachable from the module. Check the spelling."
    )


def test_dump_lists_and_shows_tables(user_module: Path) -> None:
    listing = run("dump", "--module", "userops", cwd=user_module)
    assert listing.returncode == 0, listing.stderr
    assert listing.stdout.splitlines() == [
        "userops::scale(Tensor x, float factor=2.) -> Tensor",
        "    kernels: CPU",
    ]
    table = run("dump", "--module", "userops", "--op", "userops::scale", cwd=user_module)
    assert "CPU:" in table.stdout and "[kernel]" in table.stdout
    assert "schema: userops::scale(Tensor x, float factor=2.) -> Tensor" in table.stdout
    one = run(
        "dump", "--module", "userops", "--op", "userops::scale", "--key", "CUDA", cwd=user_module
    )
    assert one.stdout.strip() == "userops::scale CUDA: (no kernel) [missing]"


def test_dump_unknown_op_is_one_line(user_module: Path) -> None:
    result = run("dump", "--module", "userops", "--op", "userops::scal", cwd=user_module)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert "userops::scale" in result.stderr


@pytest.mark.parametrize("command", ["demo", "schema", "infer", "dump", "gen"])
def test_every_command_has_help(command: str) -> None:
    result = run(command, "--help")
    assert result.returncode == 0
    assert result.stdout.startswith(f"usage: customop {command}")


def test_demo_runs_the_main_job() -> None:
    result = run("demo")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    for expected in (
        "demo::linear(Tensor x, Tensor w, *, float bias=0.) -> Tensor",
        "relu(linear(x, w, bias=-0.5)) = [[0.5, 0.5], [0.25, 0.25]]",
        "Fake:                _linear at",
        "nonzero(...) -> FakeTensor(shape=(s0, 2), dtype=int64, device=cpu)",
        "linear_1 = ops.demo.linear.default(relu, w2, bias=1.0)",
        "graph(x, w1, w2) == mlp(x, w1, w2): True",
        "flowchart TD",
    ):
        assert expected in text

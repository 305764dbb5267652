"""Kernel paths are resolved at gen time, and the generated module names the YAML line."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from customop.codegen import GenOptions, generate, load_declarations
from customop.exceptions import CodegenError
from tests.codegen.conftest import ROOT

YamlFile = Callable[..., Path]
KERNELS = """\
import numpy as np

def add(x, y):
    return x + y

class Ops:
    @staticmethod
    def neg(x):
        return -x

not_a_function = 3
"""


@pytest.fixture
def kernels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An importable kernel module with a name of its own (kept out of sys.modules after)."""
    name = f"kpaths_{abs(hash(tmp_path)) % 10**8}"
    (tmp_path / f"{name}.py").write_text(KERNELS)
    (tmp_path / f"{name}_broken.py").write_text("raise RuntimeError('no GPU here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in (name, f"{name}_broken"):
        sys.modules.pop(module, None)


def _yaml(yaml_file: YamlFile, kernel: str) -> Path:
    return yaml_file(
        f"""
        - func: kp::add(Tensor x, Tensor y) -> Tensor
          dispatch:
            CPU: {kernel}
        """
    )


@pytest.mark.parametrize(
    ("kernel", "expected"),
    [
        pytest.param("{m}:ad", "'{m}' has no attribute 'ad'. The generated module would fail "
                     "when imported. Did you mean 'add'? Fix the path", id="missing-function"),
        pytest.param("{m}:Ops.nge", "'{m}.Ops' has no attribute 'nge'", id="missing-method"),
        pytest.param("{m}:not_a_function", "is a int, not a function", id="not-callable"),
        pytest.param("{m}_broken:add", "importing module '{m}_broken' raised RuntimeError: "
                     "no GPU here", id="import-raises"),
    ],
)  # fmt: skip
def test_a_kernel_path_that_names_nothing_is_a_problem_of_its_line(
    yaml_file: YamlFile, tmp_path: Path, kernels: str, kernel: str, expected: str
) -> None:
    path = _yaml(yaml_file, kernel.format(m=kernels))
    with pytest.raises(CodegenError) as caught:
        generate(path, tmp_path / "out")
    message = str(caught.value)
    assert message.startswith(f"{path}:3: entry 'kp::add': kernel ")
    assert expected.format(m=kernels) in message
    assert "--no-check-kernels" in message
    assert not (tmp_path / "out").exists()  # nothing written


def test_good_paths_pass_and_unfound_modules_are_reported_not_checked(
    yaml_file: YamlFile, tmp_path: Path, kernels: str
) -> None:
    path = yaml_file(
        f"""
        - func: kp::add(Tensor x, Tensor y) -> Tensor
          dispatch:
            CPU: {kernels}:add
            CUDA: nowhere_to_be_found.kernels:add
        - func: kp::neg(Tensor x) -> Tensor
          dispatch:
            CPU: {kernels}:Ops.neg
            CUDA: nowhere_to_be_found.kernels:neg
        """
    )
    report = generate(path, tmp_path / "out").report
    assert [(u.name, u.count, u.first_line) for u in report.unchecked_kernels] == [
        ("nowhere_to_be_found.kernels", 2, 4)
    ]
    assert report.format().splitlines()[-2:] == [
        "kernels not checked (their module cannot be found from here):",
        f"  nowhere_to_be_found.kernels: 2 kernels, first at {path}:4",
    ]


def test_check_kernels_false_imports_nothing(
    yaml_file: YamlFile, tmp_path: Path, kernels: str
) -> None:
    path = _yaml(yaml_file, f"{kernels}_broken:add")
    files = generate(path, tmp_path / "out", GenOptions(check_kernels=False))
    assert f"{kernels}_broken" not in sys.modules
    assert files.report.unchecked_kernels == ()


def test_the_generated_module_names_the_yaml_line_of_a_kernel_it_cannot_load(
    yaml_file: YamlFile, tmp_path: Path, kernels: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _yaml(yaml_file, f"{kernels}:ad")
    out = tmp_path / "gen_mod"
    generate(path, out, GenOptions(check_kernels=False, module_name="kp_generated"))
    monkeypatch.syspath_prepend(str(out))
    try:
        with pytest.raises(ImportError) as caught:
            importlib.import_module("kp_generated")
    finally:
        sys.modules.pop("kp_generated", None)
    assert str(caught.value).startswith(
        f"ops.yaml:3: kernel {kernels}:ad cannot be loaded (AttributeError: "
    )
    assert "Fix the kernel's path at that line and run customop gen again." in str(caught.value)


@pytest.mark.parametrize("text", ["", "# only a comment\n", "[]\n"], ids=["empty", "comment", "[]"])
def test_a_file_without_entries_is_an_error(yaml_file: YamlFile, text: str) -> None:
    path = yaml_file(text)
    with pytest.raises(CodegenError) as caught:
        load_declarations(path)
    assert str(caught.value).startswith(f"{path}:1: file: the file declares no operators")


def test_the_command_checks_kernels_from_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "mykernels.py").write_text(KERNELS)
    (tmp_path / "ops.yaml").write_text(
        textwrap.dedent(
            """\
            - func: kp::add(Tensor x, Tensor y) -> Tensor
              dispatch:
                CPU: mykernels:addd
            """
        )
    )
    command = [sys.executable, "-m", "customop", "gen", "ops.yaml", "--out", "out"]
    done = _run(command, tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("customop: error: ops.yaml:3: entry 'kp::add': kernel ")
    assert "Did you mean 'add'?" in done.stderr
    skipped = [*command, "--no-check-kernels", "--quiet"]
    done = _run(skipped, tmp_path)
    assert done.returncode == 0, done.stderr


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's customop, from tmp_path
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)

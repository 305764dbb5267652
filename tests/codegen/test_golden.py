"""Golden files: the generated module and stub of examples/ops.yaml and of data/tricky.yaml.

After an intended change of the output, regenerate the golden files with

    CUSTOMOP_UPDATE_GOLDEN=1 python -m pytest tests/codegen/test_golden.py

and read the diff before committing it.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from customop.codegen import GenOptions, generate
from tests.codegen.conftest import EXAMPLE, GOLDEN, TRICKY

CASES = {
    "ops": (EXAMPLE, GenOptions()),
    "tricky": (TRICKY, GenOptions(kernels="tests.codegen.kernels")),
}
UPDATE = os.environ.get("CUSTOMOP_UPDATE_GOLDEN") == "1"


def check_golden(text: str, golden: Path) -> None:
    if UPDATE:
        golden.write_text(text)
    assert golden.exists(), f"{golden} is missing: run with CUSTOMOP_UPDATE_GOLDEN=1"
    assert text == golden.read_text(), f"{golden.name} differs: see this module's docstring"


@pytest.mark.parametrize("name", sorted(CASES))
def test_registration_module(name: str, tmp_path: Path) -> None:
    path, options = CASES[name]
    files = generate(path, tmp_path, options)
    check_golden(files.module.read_text(), GOLDEN / f"{name}.py.golden")


@pytest.mark.parametrize("name", sorted(CASES))
def test_stub(name: str, tmp_path: Path) -> None:
    path, options = CASES[name]
    files = generate(path, tmp_path, options)
    check_golden(files.stub.read_text(), GOLDEN / f"{name}.pyi.golden")


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_is_python_and_deterministic(name: str, tmp_path: Path) -> None:
    path, options = CASES[name]
    first = generate(path, tmp_path / "a", options)
    second = generate(path, tmp_path / "b", options)
    for one, other in ((first.module, second.module), (first.stub, second.stub)):
        assert one.read_text() == other.read_text()
        ast.parse(one.read_text(), filename=one.name)

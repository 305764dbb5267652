"""Codegen: a YAML ``dispatch:`` entry naming a kernel of a compiled library (``cpp:``)."""

from __future__ import annotations

import importlib
import sys
import sysconfig
import textwrap
from pathlib import Path

import numpy as np
import pytest

import customop
from customop.codegen import CppKernel, generate, load_declarations
from customop.exceptions import CodegenError, RegistrationError

pytest.importorskip("yaml")

YAML = """\
- func: yamlcpp::add(Tensor a, Tensor b) -> Tensor
  dispatch:
    CPU: cpp:{library}::add
- func: yamlcpp::twice(Tensor x, float eps=1e-05) -> Tensor
  dispatch:
    CPU: cpp:{library}::layer_norm
"""


def _generate(folder: Path, library: str, name: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(YAML.format(library=library))
    generate(path, folder)
    return folder / f"{name}.py"


def _call_generated(folder: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(folder))
    module = importlib.import_module(name)
    try:
        x = np.array([1.0, 3.0])
        np.testing.assert_allclose(customop.ops.yamlcpp.add(x, x), [2.0, 6.0])
        np.testing.assert_allclose(customop.ops.yamlcpp.twice(x, 0.0), [-1.0, 1.0])
        info = {op.name: op for op in customop.dispatcher.snapshot().operators}["yamlcpp::add"]
        assert any(k.source and f"{name}.py" in k.source for k in info.kernels)
    finally:
        module.unregister()
        sys.modules.pop(name, None)
    assert customop.dispatcher.find_op("yamlcpp::add") is None


def test_a_library_by_path_from_the_generated_module(
    tmp_path: Path, kernels_so: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "cpptest.so").symlink_to(kernels_so)
    module = _generate(tmp_path, "lib/cpptest.so", "yaml_by_path")
    text = module.read_text()
    # customop.cpp.kernel, looked up as the Python kernels are (naming the YAML line)
    assert ('_kernel("customop.cpp", "kernel", "yaml_by_path.yaml:') in text
    assert ('("lib/cpptest.so", "add", op="yamlcpp::add", key="CPU", relative_to=__file__)') in text
    _call_generated(tmp_path, "yaml_by_path", monkeypatch)


def test_a_library_by_its_extension_modules_name(
    tmp_path: Path, kernels_so: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "yamlkernels"
    package.mkdir()
    (package / "__init__.py").write_text("")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    (package / f"_kernels{suffix}").symlink_to(kernels_so)
    _generate(tmp_path, "yamlkernels._kernels", "yaml_by_module")
    _call_generated(tmp_path, "yaml_by_module", monkeypatch)
    sys.modules.pop("yamlkernels", None)


def test_the_spelling_parses_and_prints() -> None:
    kernel = CppKernel.parse("cpp:pkg._kernels::add.out")
    assert (kernel.library, kernel.name) == ("pkg._kernels", "add.out")
    assert str(kernel) == "cpp:pkg._kernels::add.out"


def test_a_bad_cpp_kernel_is_a_codegen_problem(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        textwrap.dedent("""\
        - func: yamlcpp::add(Tensor a, Tensor b) -> Tensor
          dispatch:
            CPU: cpp:lib.so
        """)
    )
    with pytest.raises(CodegenError) as caught:
        load_declarations(path)
    assert "is not a C++ kernel path" in str(caught.value)
    assert "'cpp:pkg._kernels::add'" in str(caught.value)


def test_a_kernel_the_library_does_not_have(kernels_so: Path) -> None:
    lib = customop.Library("yamlcpp", "DEF", dispatcher=(d := customop.Dispatcher()))
    lib.define("add(Tensor a, Tensor b) -> Tensor")
    try:
        with pytest.raises(RegistrationError, match=r"has no kernel 'sub' at CPU\. .* add \(CPU\)"):
            customop.cpp.kernel(kernels_so, "sub", op="yamlcpp::add", dispatcher=d)
        with pytest.raises(RegistrationError, match=r"argument 1 \(eps\) is float in the schema"):
            lib.define("bad(Tensor x, float eps) -> Tensor")
            customop.cpp.kernel(kernels_so, "add", op="yamlcpp::bad", dispatcher=d)
        kernel = customop.cpp.kernel(kernels_so, "add", op="yamlcpp::add", dispatcher=d)
        np.testing.assert_allclose(kernel(np.ones(2), np.ones(2)), [2.0, 2.0])
    finally:
        lib.close()

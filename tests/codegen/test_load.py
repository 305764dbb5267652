"""Loading declaration files: the models, every error with its file and line, the report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from customop.codegen import (
    CodegenReport,
    GenOptions,
    KernelBinding,
    KernelPath,
    Unused,
    load_declarations,
    load_tags,
)
from customop.codegen._tables import BUILTIN_TAGS, CUSTOMOP_KEYS
from customop.exceptions import CodegenError
from tests.codegen.conftest import EXAMPLE, NATIVE, TAGS

YamlFile = Callable[..., Path]


def problems(path: Path, options: GenOptions | None = None) -> list[str]:
    """The problem lines of a file that must not load, without the ``<path>:`` prefix."""
    with pytest.raises(CodegenError) as caught:
        load_declarations(path, options)
    assert str(caught.value) == "\n".join(caught.value.problems)
    prefix = f"{path}:"
    assert all(line.startswith(prefix) for line in caught.value.problems)
    return [line.removeprefix(prefix) for line in caught.value.problems]


def test_example_loads_into_declarations() -> None:
    file = load_declarations(EXAMPLE)
    first = file.declarations[0]
    assert str(first.func) == "mylib::add(Tensor x, Tensor y, *, Scalar alpha=1) -> Tensor"
    assert first.line == 9
    assert first.tags == ("pointwise",)
    assert first.variants == ("function",)
    kernel = KernelPath(module="examples.kernels", qualname="add")
    assert first.dispatch == (
        KernelBinding(key="CPU", kernel=kernel, written=str(kernel), line=11),
    )
    assert file.namespaces == ("mylib",)
    loss = file.declarations[3]
    assert loss.define_text == "mse_loss(Tensor input, Tensor target, int reduction=Mean) -> Tensor"


def test_dotted_kernel_path_and_key_groups(yaml_file: YamlFile) -> None:
    path = yaml_file(
        """
        - func: ns::f(Tensor x) -> Tensor
          dispatch:
            CPU, CUDA: pkg.mod.f
            Meta: pkg.mod:Kernels.f_meta
        """
    )
    (decl,) = load_declarations(path).declarations
    kernel = KernelPath(module="pkg.mod", qualname="f")
    meta = KernelPath(module="pkg.mod", qualname="Kernels.f_meta")
    assert [(b.key, b.kernel) for b in decl.dispatch] == [
        ("CPU", kernel),
        ("CUDA", kernel),
        ("Meta", meta),
    ]
    assert (str(meta), meta.expression) == ("pkg.mod:Kernels.f_meta", "pkg.mod.Kernels.f_meta")


def test_bare_kernel_names_resolve_against_the_kernels_module(yaml_file: YamlFile) -> None:
    path = yaml_file(
        """
        - func: f(Tensor x) -> Tensor
          dispatch:
            CPU: f_cpu
            Meta: other.mod:f_meta
        """
    )
    unbound = load_declarations(path).declarations[0]
    assert [b.kernel for b in unbound.dispatch] == [
        None,
        KernelPath(module="other.mod", qualname="f_meta"),
    ]
    bound = load_declarations(path, GenOptions(kernels="my.kernels")).declarations[0]
    assert bound.dispatch[0].kernel == KernelPath(module="my.kernels", qualname="f_cpu")


def test_funcs_without_namespace_take_the_default(yaml_file: YamlFile) -> None:
    path = yaml_file("- func: f(Tensor x) -> Tensor\n- func: other::g(Tensor x) -> Tensor\n")
    assert load_declarations(path).namespaces == ("aten", "other")
    renamed = load_declarations(path, GenOptions(namespace="mine"))
    assert [str(d.name) for d in renamed.declarations] == ["mine::f", "other::g"]


def test_pytorch_only_fields_and_keys_are_reported_as_unused(yaml_file: YamlFile) -> None:
    path = yaml_file(
        """
        - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          device_check: NoCheck
          structured_delegate: add.out
          variants: function, method
          dispatch:
            SparseCPU, SparseCUDA: add_sparse
            MkldnnCPU: mkldnn_add
            CPU: add_cpu
          tags: [core, pointwise]
        - func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
          structured: True
          structured_inherits: TensorIteratorBase
          ufunc_inner_loop:
            Generic: add (AllAndComplex, BFloat16, Half, ComplexHalf)
          dispatch:
            SparseCPU: add_out_sparse_cpu
        """
    )
    file = load_declarations(path)
    assert file.declarations[0].unused_fields == ("device_check", "structured_delegate")
    assert file.declarations[0].unused_keys == ("SparseCPU", "SparseCUDA", "MkldnnCPU")
    assert file.declarations[0].variants == ("function", "method")
    assert file.report() == CodegenReport(
        path=str(path),
        entries=2,
        operators=1,
        namespaces=("aten",),
        registrations=0,
        unused_fields=(
            Unused(name="device_check", count=1, first_line=1),
            Unused(name="structured_delegate", count=1, first_line=1),
            Unused(name="structured", count=1, first_line=10),
            Unused(name="structured_inherits", count=1, first_line=10),
            Unused(name="ufunc_inner_loop", count=1, first_line=10),
        ),
        unused_keys=(
            Unused(name="SparseCPU", count=2, first_line=1),
            Unused(name="SparseCUDA", count=1, first_line=1),
            Unused(name="MkldnnCPU", count=1, first_line=1),
        ),
        unbound_kernels=Unused(name="bare names", count=1, first_line=8),
    )
    assert file.report().format().splitlines() == [
        f"{path}: 2 entries, 1 operator in 1 namespace (aten), 0 kernel registrations.",
        "unused fields (PyTorch's C++ codegen reads them, customop does not):",
        f"  device_check: 1 entry, first at {path}:1",
        f"  structured_delegate: 1 entry, first at {path}:1",
        f"  structured: 1 entry, first at {path}:10",
        f"  structured_inherits: 1 entry, first at {path}:10",
        f"  ufunc_inner_loop: 1 entry, first at {path}:10",
        "unused dispatch keys (customop has no such key; nothing registered):",
        f"  SparseCPU: 2 entries, first at {path}:1",
        f"  SparseCUDA: 1 entry, first at {path}:1",
        f"  MkldnnCPU: 1 entry, first at {path}:1",
        "unbound kernels (give --kernels MODULE to register them):",
        f"  bare names: 1 kernel, first at {path}:8",
    ]


def test_every_native_functions_entry_loads() -> None:
    file = load_declarations(NATIVE, GenOptions(tags_file=TAGS))
    assert len(file.declarations) == 2584
    assert file.namespaces == ("aten",)
    report = file.report()
    assert (report.entries, report.operators, report.registrations) == (2584, 1554, 0)
    assert {u.name for u in report.unused_fields} == {
        "autogen", "category_override", "cpp_no_default_args", "device_check", "device_guard",
        "manual_cpp_binding", "precomputed", "structured", "structured_delegate",
        "structured_inherits", "ufunc_inner_loop", "use_const_ref_for_mutable_tensors",
    }  # fmt: skip
    assert report.unbound_kernels is not None and report.unbound_kernels.count == 2240
    sources = [d.func.format("source") for d in file.declarations]
    funcs = [line.split("\t")[0] for line in (NATIVE.parent / "native_functions_canonical.tsv")
             .read_text().splitlines()[1:]]  # fmt: skip
    assert sources == ["aten::" + func for func in funcs]


def test_native_functions_kernels_bind_with_a_kernels_module() -> None:
    file = load_declarations(NATIVE, GenOptions(kernels="aten_kernels"))
    assert file.report().unbound_kernels is None
    assert file.report().registrations == 2240


def test_tags_file_replaces_the_builtin_set(yaml_file: YamlFile, tmp_path: Path) -> None:
    tags = tmp_path / "tags.yaml"
    tags.write_text("- tag: fast\n  desc: runs fast\n- tag: slow\n")
    assert load_tags(tags) == {"fast", "slow"}
    assert load_tags(TAGS) == BUILTIN_TAGS
    path = yaml_file("- func: ns::f(Tensor x) -> Tensor\n  tags: [fast, core]\n")
    assert problems(path, GenOptions(tags_file=tags)) == [
        f"2: entry 'ns::f(Tensor x) -> Tensor': tag 'core' is unknown. Tags are checked against "
        f"{tags} so that a misspelt tag is caught. Add it to the tags file, or remove it.",
    ]


def test_customop_keys_match_the_dispatcher() -> None:
    dispatch = pytest.importorskip("customop.dispatch")
    assert [key.name for key in dispatch.DispatchKey] == list(CUSTOMOP_KEYS)

"""The data codegen checks declarations against: fields, dispatch keys and tags.

Each table is plain data so that the YAML field reference in docs/codegen.md,
the checks and the report all read the same names.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "BUILTIN_TAGS",
    "CUSTOMOP_KEYS",
    "FIELD_EXAMPLES",
    "TORCH_ONLY_FIELDS",
    "TORCH_ONLY_KEYS",
    "USED_FIELDS",
]

#: The fields codegen acts on or validates.
USED_FIELDS: Final = ("func", "variants", "dispatch", "tags", "python_module")

#: How each used field is written, quoted in error messages.
FIELD_EXAMPLES: Final[dict[str, str]] = {
    "func": "'func: mylib::add(Tensor x, Tensor y) -> Tensor'",
    "variants": "'variants: function, method'",
    "dispatch": "'dispatch: {CPU, CUDA: mypkg.kernels:add}'",
    "tags": "'tags: pointwise' or 'tags: [core, pointwise]'",
    "python_module": "'python_module: nn'",
}

#: Fields of PyTorch's native_functions.yaml that drive its C++ codegen only
#: (torchgen/model.py, NativeFunction.from_yaml). customop accepts them so that
#: PyTorch's own file loads, and lists them in the report as unused.
TORCH_ONLY_FIELDS: Final = frozenset(
    {
        "autogen", "category_override", "cpp_no_default_args", "device_check", "device_guard",
        "manual_cpp_binding", "manual_kernel_registration", "precomputed", "structured",
        "structured_delegate", "structured_inherits", "ufunc_inner_loop",
        "use_const_ref_for_mutable_tensors",
    }
)  # fmt: skip

#: The dispatch keys customop has (DESIGN §3), in the order the registration
#: module groups kernels: backends, then functionality keys, then alias keys.
#: NOTE: mirrors customop.dispatch.DispatchKey; read it from there once that layer lands.
CUSTOMOP_KEYS: Final = (
    "CPU", "CUDA", "PrivateUse1", "PrivateUse2", "PrivateUse3", "Meta",
    "Fake", "AutogradCPU", "AutogradCUDA", "AutogradPrivateUse1", "AutogradPrivateUse2",
    "AutogradPrivateUse3", "AutogradMeta", "AutogradOther", "Tracer", "Batched", "Python",
    "CompositeExplicitAutograd", "CompositeImplicitAutograd", "Autograd",
)  # fmt: skip

# torch 2.13's DispatchKey names (torchgen/model.py): per-backend keys are a
# functionality prefix times a backend component, the rest stand alone.
_TORCH_BACKENDS = (
    "CPU", "CUDA", "HIP", "XLA", "MTIA", "MPS", "IPU", "XPU", "HPU", "VE", "Lazy", "Meta",
    "PrivateUse1", "PrivateUse2", "PrivateUse3",
)  # fmt: skip
_TORCH_PER_BACKEND = ("", "Quantized", "Sparse", "SparseCsr", "NestedTensor", "Autograd")
_TORCH_STANDALONE = (
    "ADInplaceOrView", "Autocast", "AutocastCPU", "AutocastCUDA", "AutocastXPU", "Autograd",
    "AutogradFunctionality", "AutogradNestedTensor", "AutogradOther", "BackendSelect",
    "Batched", "BatchedNestedTensor", "CatchAll", "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional", "CompositeImplicitAutograd",
    "CompositeImplicitAutogradNestedTensor", "Conjugate", "CustomRNGKeyId", "Dense", "FPGA",
    "FuncTorchBatched", "FuncTorchBatchedDecomposition", "FuncTorchDynamicLayerBackMode",
    "FuncTorchDynamicLayerFrontMode", "FuncTorchGradWrapper", "FuncTorchVmapMode",
    "Functionalize", "IDEEP", "MAIA", "MKLDNN", "Metal", "MkldnnCPU", "Named", "Negative",
    "NestedTensor", "OpenCL", "OpenGL", "PreDispatch", "Python", "PythonDispatcher",
    "PythonTLSSnapshot", "Sparse", "SparseCsr", "TESTING_ONLY_GenericMode",
    "TESTING_ONLY_GenericWrapper", "Tracer", "Undefined", "VmapMode", "Vulkan", "ZeroTensor",
)  # fmt: skip

#: torch keys customop has no equivalent for: accepted, reported as unused.
TORCH_ONLY_KEYS: Final = frozenset(
    {prefix + backend for prefix in _TORCH_PER_BACKEND for backend in _TORCH_BACKENDS}
    | set(_TORCH_STANDALONE)
) - frozenset(CUSTOMOP_KEYS)

#: The tags of torch 2.13's tags.yaml, used when no tags file is given.
BUILTIN_TAGS: Final = frozenset(
    {
        "core", "cudagraph_unsafe", "data_dependent_output", "dynamic_output_shape",
        "flexible_layout", "generated", "inplace", "inplace_view", "maybe_aliasing_or_mutating",
        "needs_contiguous_strides", "needs_exact_strides", "needs_fixed_stride_order",
        "nondeterministic_bitwise", "nondeterministic_seeded", "out", "out_variant",
        "pointwise", "pt2_compliant_tag", "reduction", "view_copy",
    }
)  # fmt: skip

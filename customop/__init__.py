"""customop: define, register, dispatch, fake and trace custom operators, without torch.

The public surface is exactly ``__all__``; everything else lives in private
modules. The guides are in the ``docs/`` folder.
"""

from typing import TYPE_CHECKING, Any

from customop.schema import load_lazily
from customop.autograd import gradcheck
from customop.dispatch import DispatchKey
from customop.dispatch import DispatchKeySet
from customop.dispatch import DispatchMode
from customop.dispatch import Dispatcher
from customop.dispatch import OperatorHandle
from customop.dispatch import RegistrationHandle
from customop.dispatch import below
from customop.dispatch import exclude_keys
from customop.dispatch import fallthrough
from customop.dispatch import include_keys
from customop.dispatch import dispatcher
from customop.exceptions import AutogradError
from customop.exceptions import BuildError
from customop.exceptions import CheckError
from customop.exceptions import CodegenError
from customop.exceptions import DataDependentError
from customop.exceptions import DebugCheckError
from customop.exceptions import DispatchKeyError
from customop.exceptions import ExclusiveTagsError
from customop.exceptions import GradcheckError
from customop.exceptions import GraphError
from customop.exceptions import KernelError
from customop.exceptions import KernelOverrideWarning
from customop.exceptions import KernelReturnError
from customop.exceptions import MissingKernelError
from customop.exceptions import OpCheckError
from customop.exceptions import RegistrationError
from customop.exceptions import SchemaError
from customop.exceptions import SchemaParseError
from customop.exceptions import UnknownOperatorError
from customop.exceptions import VmapError
from customop.exceptions import VmapFallbackWarning
from customop.fake import FakeTensorMode
from customop.fake import get_ctx
from customop.fake import opcheck
from customop.library import CustomOpDef
from customop.library import Library
from customop.library import OpOverload
from customop.library import OpOverloadPacket
from customop.library import custom_op
from customop.library import debug_checks
from customop.library import define
from customop.library import get_kernel
from customop.library import handle_of
from customop.library import impl
from customop.library import impl_abstract
from customop.library import library
from customop.library import library_fragment
from customop.library import library_impl
from customop.library import ops
from customop.library import register_autograd
from customop.library import register_blockwise
from customop.library import register_fake
from customop.library import register_torch_dispatch
from customop.library import register_kernel
from customop.library import register_vmap
from customop.schema import FunctionSchema
from customop.schema import MutatesArgs
from customop.schema import parse_operator_name
from customop.schema import parse_schema
from customop.tensor import AnyTensor
from customop.tensor import Device
from customop.tensor import FakeTensor
from customop.tensor import SymBool
from customop.tensor import SymInt
from customop.tensor import Tensor
from customop.tensor import TensorOps
from customop.tensor import bfloat16
from customop.tensor import bool_
from customop.tensor import check
from customop.tensor import check_is_size
from customop.tensor import complex128
from customop.tensor import complex64
from customop.tensor import dtype
from customop.tensor import float16
from customop.tensor import float32
from customop.tensor import float64
from customop.tensor import int16
from customop.tensor import int32
from customop.tensor import int64
from customop.tensor import int8
from customop.tensor import uint16
from customop.tensor import uint32
from customop.tensor import uint64
from customop.tensor import uint8
from customop.tensor import empty
from customop.tensor import empty_like
from customop.tensor import new_empty
from customop.tensor import register_backend
from customop.trace import Graph
from customop.trace import trace
from customop.vmap import vmap

# The Dask backend registers itself by name in customop.dispatcher (dask stays unimported).
import customop.dask as _dask  # noqa: F401

if TYPE_CHECKING:
    from customop.cpp import load_library
    from customop.schema import infer_schema

__version__ = "0.1.0"

__all__ = [  # noqa: RUF022 -- plain sorted() order, which tests/test_public_api.py checks
    "AnyTensor",
    "AutogradError",
    "BuildError",
    "CheckError",
    "CodegenError",
    "CustomOpDef",
    "DataDependentError",
    "DebugCheckError",
    "Device",
    "DispatchKey",
    "DispatchKeyError",
    "DispatchKeySet",
    "DispatchMode",
    "Dispatcher",
    "ExclusiveTagsError",
    "FakeTensor",
    "FakeTensorMode",
    "FunctionSchema",
    "GradcheckError",
    "Graph",
    "GraphError",
    "KernelError",
    "KernelOverrideWarning",
    "KernelReturnError",
    "Library",
    "MissingKernelError",
    "MutatesArgs",
    "OpCheckError",
    "OpOverload",
    "OpOverloadPacket",
    "OperatorHandle",
    "RegistrationError",
    "RegistrationHandle",
    "SchemaError",
    "SchemaParseError",
    "SymBool",
    "SymInt",
    "Tensor",
    "TensorOps",
    "UnknownOperatorError",
    "VmapError",
    "VmapFallbackWarning",
    "below",
    "bfloat16",
    "bool_",
    "check",
    "check_is_size",
    "complex128",
    "complex64",
    "custom_op",
    "debug_checks",
    "define",
    "dispatcher",
    "dtype",
    "empty",
    "empty_like",
    "exclude_keys",
    "fallthrough",
    "float16",
    "float32",
    "float64",
    "get_ctx",
    "get_kernel",
    "gradcheck",
    "handle_of",
    "impl",
    "impl_abstract",
    "include_keys",
    "infer_schema",
    "int16",
    "int32",
    "int64",
    "int8",
    "library",
    "library_fragment",
    "library_impl",
    "load_library",
    "new_empty",
    "opcheck",
    "ops",
    "parse_operator_name",
    "parse_schema",
    "register_autograd",
    "register_backend",
    "register_blockwise",
    "register_fake",
    "register_kernel",
    "register_torch_dispatch",
    "register_vmap",
    "trace",
    "uint16",
    "uint32",
    "uint64",
    "uint8",
    "vmap",
]


def __getattr__(name: str) -> Any:
    # `infer_schema` loads schema inference on first use (see customop/schema/__init__.py);
    # `load_library` loads customop.cpp (ctypes; TVM-FFI only with the first library).
    if name == "load_library":
        return load_lazily(__name__, name, frozenset({name}), "customop.cpp")
    return load_lazily(__name__, name, frozenset({"infer_schema"}), "customop.schema")

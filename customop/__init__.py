"""customop: define, register, dispatch, fake and trace custom operators, without torch.

The public surface is exactly ``__all__``; everything else lives in private
modules. The guides are in the ``docs/`` folder.
"""

from customop.autograd import gradcheck
from customop.dispatch import DispatchKey
from customop.dispatch import DispatchKeySet
from customop.dispatch import Dispatcher
from customop.dispatch import OperatorHandle
from customop.dispatch import RegistrationHandle
from customop.dispatch import below
from customop.dispatch import exclude_keys
from customop.dispatch import fallthrough
from customop.dispatch import include_keys
from customop.dispatch._global import dispatcher
from customop.exceptions import AutogradError
from customop.exceptions import CodegenError
from customop.exceptions import DispatchKeyError
from customop.exceptions import KernelOverrideWarning
from customop.exceptions import MissingKernelError
from customop.exceptions import OpCheckError
from customop.exceptions import RegistrationError
from customop.exceptions import SchemaError
from customop.exceptions import SchemaParseError
from customop.exceptions import UnknownOperatorError
from customop.fake import FakeTensorMode
from customop.fake import get_ctx
from customop.fake import opcheck
from customop.library import CustomOpDef
from customop.library import DebugCheckError
from customop.library import Library
from customop.library import OpOverload
from customop.library import OpOverloadPacket
from customop.library import custom_op
from customop.library import debug_checks
from customop.library import library
from customop.library import library_fragment
from customop.library import library_impl
from customop.library import ops
from customop.library import register_autograd
from customop.library import register_fake
from customop.library import register_kernel
from customop.schema import FunctionSchema
from customop.schema import MutatesArgs
from customop.schema import infer_schema
from customop.schema import parse_operator_name
from customop.schema import parse_schema
from customop.tensor import Device
from customop.tensor import FakeTensor
from customop.tensor import SymInt
from customop.tensor import Tensor
from customop.tensor import empty
from customop.tensor import empty_like
from customop.tensor import new_empty
from customop.tensor import register_backend
from customop.trace import Graph
from customop.trace import trace

__version__ = "0.1.0"

__all__ = [
    "AutogradError",
    "CodegenError",
    "CustomOpDef",
    "DebugCheckError",
    "Device",
    "DispatchKey",
    "DispatchKeyError",
    "DispatchKeySet",
    "Dispatcher",
    "FakeTensor",
    "FakeTensorMode",
    "FunctionSchema",
    "Graph",
    "KernelOverrideWarning",
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
    "SymInt",
    "Tensor",
    "UnknownOperatorError",
    "below",
    "custom_op",
    "debug_checks",
    "dispatcher",
    "empty",
    "empty_like",
    "exclude_keys",
    "fallthrough",
    "get_ctx",
    "gradcheck",
    "include_keys",
    "infer_schema",
    "library",
    "library_fragment",
    "library_impl",
    "new_empty",
    "opcheck",
    "ops",
    "parse_operator_name",
    "parse_schema",
    "register_autograd",
    "register_backend",
    "register_fake",
    "register_kernel",
    "trace",
]

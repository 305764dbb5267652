"""customop: define, register, dispatch, fake and trace custom operators, without torch.

The public surface is exactly ``__all__``; everything else lives in private
modules. The guides are in the ``docs/`` folder.
"""

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
from customop.exceptions import CodegenError
from customop.exceptions import DispatchKeyError
from customop.exceptions import KernelOverrideWarning
from customop.exceptions import MissingKernelError
from customop.exceptions import RegistrationError
from customop.exceptions import SchemaError
from customop.exceptions import SchemaParseError
from customop.exceptions import UnknownOperatorError
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
from customop.library import register_fake
from customop.library import register_kernel
from customop.schema import FunctionSchema
from customop.schema import MutatesArgs
from customop.schema import infer_schema
from customop.schema import parse_operator_name
from customop.schema import parse_schema
from customop.tensor import Tensor

__version__ = "0.1.0"

__all__ = [
    "CodegenError",
    "CustomOpDef",
    "DebugCheckError",
    "DispatchKey",
    "DispatchKeyError",
    "DispatchKeySet",
    "Dispatcher",
    "FunctionSchema",
    "KernelOverrideWarning",
    "Library",
    "MissingKernelError",
    "MutatesArgs",
    "OpOverload",
    "OpOverloadPacket",
    "OperatorHandle",
    "RegistrationError",
    "RegistrationHandle",
    "SchemaError",
    "SchemaParseError",
    "Tensor",
    "UnknownOperatorError",
    "below",
    "custom_op",
    "debug_checks",
    "dispatcher",
    "exclude_keys",
    "fallthrough",
    "include_keys",
    "infer_schema",
    "library",
    "library_fragment",
    "library_impl",
    "ops",
    "parse_operator_name",
    "parse_schema",
    "register_fake",
    "register_kernel",
]

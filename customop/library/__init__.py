"""Front-ends: `Library`, block decorators, ``ops``, ``@custom_op`` and kernel hooks."""

from customop.library._autograd import register_autograd
from customop.library._custom_op import CustomOpDef
from customop.library._custom_op import custom_op
from customop.library._debug import DebugCheckError
from customop.library._debug import debug_checks
from customop.library._hooks import register_fake
from customop.library._hooks import register_kernel
from customop.library._library import Library
from customop.library._library import library
from customop.library._library import library_fragment
from customop.library._library import library_impl
from customop.library._ops import OpNamespace
from customop.library._ops import OpOverloadPacket
from customop.library._ops import Ops
from customop.library._ops import ops
from customop.library._overload import OpOverload

__all__ = [
    "CustomOpDef",
    "DebugCheckError",
    "Library",
    "OpNamespace",
    "OpOverload",
    "OpOverloadPacket",
    "Ops",
    "custom_op",
    "debug_checks",
    "library",
    "library_fragment",
    "library_impl",
    "ops",
    "register_autograd",
    "register_fake",
    "register_kernel",
]

"""Front-ends: `Library`, blocks, ``ops``, ``@custom_op``, kernel hooks, free functions."""

from customop.autograd import register_autograd
from customop.dask import register_blockwise
from customop.library._custom_op import CustomOpDef
from customop.library._custom_op import custom_op
from customop.fake import DebugCheckError
from customop.fake import debug_checks
from customop.library._free import define
from customop.library._free import get_kernel
from customop.library._free import impl
from customop.library._free import impl_abstract
from customop.library._hooks import register_fake
from customop.library._hooks import register_kernel
from customop.library._library import Library
from customop.library._library import library
from customop.library._library import library_fragment
from customop.library._library import library_impl
from customop.ops import OpNamespace
from customop.ops import OpOverloadPacket
from customop.ops import Ops
from customop.ops import ops
from customop.ops import OpOverload
from customop.library._registered import handle_of
from customop.library._torch_dispatch import register_torch_dispatch
from customop.vmap import register_vmap

# Internal API: the names sibling packages may import from this one's private
# modules (tests/test_layers.py checks every import against this list).
from customop.library._torch_dispatch import TORCH_DISPATCH as TORCH_DISPATCH

__internal__ = ("TORCH_DISPATCH",)

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
    "define",
    "get_kernel",
    "handle_of",
    "impl",
    "impl_abstract",
    "library",
    "library_fragment",
    "library_impl",
    "ops",
    "register_autograd",
    "register_blockwise",
    "register_fake",
    "register_kernel",
    "register_torch_dispatch",
    "register_vmap",
]

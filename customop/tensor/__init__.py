"""Tensors: the Tensor protocol, devices, dtypes, backend adapters, FakeTensor and SymInt.

See ``docs/tensors.md``. Importing this package registers `FakeTensor` and
the lazy torch / cupy adapters in ``customop.dispatcher`` (`install_backends`).
"""

from customop.tensor._backends import ArrayAdapter
from customop.tensor._backends import adapter_for
from customop.tensor._backends import device_of
from customop.tensor._backends import register_backend
from customop.tensor._check import CheckError
from customop.tensor._check import check
from customop.tensor._check import check_is_size
from customop.tensor._device import Device
from customop.tensor._dtype import bfloat16
from customop.tensor._dtype import bool_
from customop.tensor._dtype import complex64
from customop.tensor._dtype import complex128
from customop.tensor._dtype import dtype
from customop.tensor._dtype import dtype_from_code
from customop.tensor._dtype import float16
from customop.tensor._dtype import float32
from customop.tensor._dtype import float64
from customop.tensor._dtype import int8
from customop.tensor._dtype import int16
from customop.tensor._dtype import int32
from customop.tensor._dtype import int64
from customop.tensor._dtype import uint8
from customop.tensor._dtype import uint16
from customop.tensor._dtype import uint32
from customop.tensor._dtype import uint64
from customop.tensor._factory import CURRENT_FAKE_MODE
from customop.tensor._factory import FakeTensorFactory
from customop.tensor._factory import current_fake_mode
from customop.tensor._factory import empty
from customop.tensor._factory import empty_like
from customop.tensor._factory import new_empty
from customop.tensor._fake import FakeTensor
from customop.tensor._install import FAKE_KEYS
from customop.tensor._install import install_backends
from customop.tensor._protocol import AnyTensor
from customop.tensor._protocol import Tensor
from customop.tensor._protocol import TensorOps
from customop.symbolic import DataDependentError
from customop.symbolic import ShapeEnv
from customop.symbolic import SymInt
from customop.symbolic import sym_max
from customop.symbolic import sym_min
from customop.symbolic import SymBool

# Internal API: the names sibling packages may import from this one's private
# modules (tests/test_layers.py checks every import against this list).
from customop.tensor._backends import BUILTIN_DEVICES as BUILTIN_DEVICES
from customop.tensor._backends import add_adapter as add_adapter
from customop.tensor._fake_math import COMPUTING_AN_OP as COMPUTING_AN_OP
from customop.tensor._backends import numpy_empty as numpy_empty
from customop.tensor._check import ASSUMPTION_SINK as ASSUMPTION_SINK
from customop.tensor._check import assumptions_about as assumptions_about
from customop.tensor._ctx import FAKE_IMPL_CODES as FAKE_IMPL_CODES
from customop.tensor._ctx import FakeImplCtx as FakeImplCtx
from customop.tensor._ctx import get_ctx as get_ctx
from customop.tensor._dtype import DTYPES as DTYPES
from customop.tensor._dtype import to_dtype as to_dtype
from customop.tensor._fake_layout import dense_like as dense_like
from customop.tensor._lazy import torch_tracks as torch_tracks
from customop.tensor._fake_layout import real_strides as real_strides
from customop.tensor._fake_layout import significant_mismatch as significant_mismatch
from customop.tensor._factory import PLAIN_FAKE_FACTORIES as PLAIN_FAKE_FACTORIES

__internal__ = (
    "COMPUTING_AN_OP",
    "ASSUMPTION_SINK",
    "BUILTIN_DEVICES",
    "DTYPES",
    "FAKE_IMPL_CODES",
    "FakeImplCtx",
    "PLAIN_FAKE_FACTORIES",
    "add_adapter",
    "assumptions_about",
    "numpy_empty",
    "dense_like",
    "get_ctx",
    "real_strides",
    "significant_mismatch",
    "to_dtype",
    "torch_tracks",
)

__all__ = [  # noqa: RUF022 -- plain sorted() order, which tests/test_public_api.py checks
    "AnyTensor",
    "ArrayAdapter",
    "CURRENT_FAKE_MODE",
    "CheckError",
    "DataDependentError",
    "Device",
    "FAKE_KEYS",
    "FakeTensor",
    "FakeTensorFactory",
    "ShapeEnv",
    "SymBool",
    "SymInt",
    "Tensor",
    "TensorOps",
    "adapter_for",
    "bfloat16",
    "bool_",
    "check",
    "check_is_size",
    "complex128",
    "complex64",
    "current_fake_mode",
    "device_of",
    "dtype",
    "dtype_from_code",
    "empty",
    "empty_like",
    "float16",
    "float32",
    "float64",
    "install_backends",
    "int16",
    "int32",
    "int64",
    "int8",
    "new_empty",
    "register_backend",
    "sym_max",
    "sym_min",
    "uint16",
    "uint32",
    "uint64",
    "uint8",
]

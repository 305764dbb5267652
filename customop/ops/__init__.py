"""Call objects: what every op call goes through.

`OpOverload` (one overload, called with its schema's exact signature), the
packets of ``customop.ops.<ns>.<name>``, overload choice, argument checks
and binding, and the one generator of per-op call code (`compile_function`
is its one door to ``compile`` and ``linecache``).
"""

from customop.ops._overload import OpOverload
from customop.ops._packets import OpNamespace
from customop.ops._packets import OpOverloadPacket
from customop.ops._packets import Ops
from customop.ops._packets import ops

# Internal API: the names sibling packages may import from this one's private
# modules (tests/test_layers.py checks every import against this list).
from customop.ops._binding import MISSING as MISSING
from customop.ops._binding import explaining_qualname as explaining_qualname
from customop.ops._callgen import can_generate as can_generate
from customop.ops._callgen import item_types as item_types
from customop.ops._callgen import items_checkable as items_checkable
from customop.ops._callgen import python_default as python_default
from customop.ops._callhooks import on_call_object as on_call_object
from customop.ops._compiling import refuse_under_dynamo as refuse_under_dynamo
from customop.ops._checks import BASE_CHECKS as BASE_CHECKS
from customop.ops._checks import argument_type_error as argument_type_error
from customop.ops._checks import checked_values as checked_values
from customop.ops._checks import attach_value_checks as attach_value_checks
from customop.ops._choices import choice_checks as choice_checks
from customop.ops._choices import enum_kernel as enum_kernel
from customop.ops._codegen import compile_function as compile_function
from customop.ops._codegen import forget as forget
from customop.ops._debugstate import debug_state as debug_state
from customop.ops._dtype_args import canonical_dtypes as canonical_dtypes
from customop.ops._written import prepare_kernel as prepare_kernel
from customop.ops._identity import DEFINITION as DEFINITION
from customop.ops._identity import OpDefinition as OpDefinition
from customop.ops._identity import definition_of as definition_of
from customop.ops._identity import find_handle as find_handle
from customop.ops._identity import operator_handle as operator_handle
from customop.ops._overload import bind_overload as bind_overload
from customop.ops._packets import defined_names as defined_names
from customop.ops._signature import check_signature as check_signature
from customop.ops._swap import restore_class as restore_class
from customop.ops._swap import swap_class as swap_class
from customop.ops._calltemplate import CallShape as CallShape
from customop.ops._calltemplate import Guard as Guard
from customop.ops._calltemplate import render as render
from customop.ops._calltemplate import kernel_slot as kernel_slot
from customop.ops._callgen import call_defaults as call_defaults

__internal__ = (
    "CallShape",
    "Guard",
    "call_defaults",
    "compile_function",
    "forget",
    "kernel_slot",
    "render",
    "restore_class",
    "swap_class",
    "BASE_CHECKS",
    "DEFINITION",
    "MISSING",
    "OpDefinition",
    "argument_type_error",
    "checked_values",
    "attach_value_checks",
    "bind_overload",
    "can_generate",
    "canonical_dtypes",
    "prepare_kernel",
    "check_signature",
    "choice_checks",
    "debug_state",
    "defined_names",
    "definition_of",
    "enum_kernel",
    "explaining_qualname",
    "find_handle",
    "item_types",
    "items_checkable",
    "operator_handle",
    "python_default",
    "on_call_object",
    "refuse_under_dynamo",
)

__all__ = [
    "OpNamespace",
    "OpOverload",
    "OpOverloadPacket",
    "Ops",
    "ops",
]

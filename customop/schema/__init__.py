"""Operator schemas: the model, the parser and printer, and type-hint inference."""

from typing import TYPE_CHECKING, Any

from customop.schema._lazy import load_lazily as load_lazily
from customop.schema._builtin_annotations import Device
from customop.schema._defaults import Default
from customop.schema._model import Argument
from customop.schema._model import FunctionSchema
from customop.schema._model import OperatorName
from customop.schema._model import Return
from customop.schema._model import TensorKind
from customop.schema._mutates import MutatesArgs
from customop.schema._parser import parse_operator_name
from customop.schema._parser import parse_schema
from customop.schema._parser import parse_schema_or_name
from customop.schema._printer import PrintStyle
from customop.schema._types import AliasInfo
from customop.schema._types import BaseType
from customop.schema._types import ClassType
from customop.schema._types import DictType
from customop.schema._types import FutureType
from customop.schema._types import ListType
from customop.schema._types import OptionalType
from customop.schema._types import SchemaType
from customop.schema._types import TupleType
from customop.schema._types import UnionType
from customop.schema._types import VarType

if TYPE_CHECKING:
    from customop.schema._infer import InferredSchema
    from customop.schema._infer import infer_schema
    from customop.schema._infer import infer_schema_details
    from customop.schema._infer import register_annotation
    from customop.schema._infer_table import Choices

# Internal API: the names sibling packages may import from this one's private
# modules (tests/test_layers.py checks every import against this list).
from customop.schema._builtin_annotations import add_built_in as add_built_in
from customop.schema._clip import clip as clip
from customop.schema._clip import clip_repr as clip_repr
from customop.schema._clip import close_matches as close_matches
from customop.schema._defaults import SCALAR_TYPE_CODES as SCALAR_TYPE_CODES
from customop.schema._model import tensor_kind as tensor_kind
from customop.schema._tags import INPLACE as INPLACE
from customop.schema._tags import OUT as OUT
from customop.schema._tags import AliasingTag as AliasingTag
from customop.schema._tags import aliasing_tag as aliasing_tag
from customop.schema._tags import check_tagged_schema as check_tagged_schema
from customop.schema._tags import is_torch_tag as is_torch_tag
from customop.schema._tags import tag_name as tag_name
from customop.schema._tags import torch_spelling as torch_spelling

__internal__ = (
    "INPLACE",
    "OUT",
    "SCALAR_TYPE_CODES",
    "AliasingTag",
    "add_built_in",
    "aliasing_tag",
    "check_tagged_schema",
    "clip",
    "clip_repr",
    "close_matches",
    "is_torch_tag",
    "load_lazily",
    "tag_name",
    "tensor_kind",
    "torch_spelling",
)

__all__ = [
    "AliasInfo",
    "Argument",
    "BaseType",
    "Choices",
    "ClassType",
    "Default",
    "Device",
    "DictType",
    "FunctionSchema",
    "FutureType",
    "InferredSchema",
    "ListType",
    "MutatesArgs",
    "OperatorName",
    "OptionalType",
    "PrintStyle",
    "Return",
    "SchemaType",
    "TensorKind",
    "TupleType",
    "UnionType",
    "VarType",
    "infer_schema",
    "infer_schema_details",
    "parse_operator_name",
    "parse_schema",
    "parse_schema_or_name",
    "register_annotation",
]


# Inference (`customop.schema._infer`, its tables and the signature and
# annotation walkers under it) loads on first use: a few milliseconds of
# `import customop` that a program pays only when it infers a schema (issue
# #12). The upper layers' annotation classes wait in
# `customop.schema._builtin_annotations` until then.
_INFERENCE = frozenset(
    {"Choices", "InferredSchema", "infer_schema", "infer_schema_details", "register_annotation"}
)


def __getattr__(name: str) -> Any:
    return load_lazily(__name__, name, _INFERENCE, "customop.schema._infer")

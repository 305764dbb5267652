"""Operator schemas: the model, the parser and printer, and type-hint inference."""

from customop.schema._defaults import Default
from customop.schema._infer import InferredSchema
from customop.schema._infer import MutatesArgs
from customop.schema._infer import infer_schema
from customop.schema._infer import infer_schema_details
from customop.schema._infer import register_annotation
from customop.schema._infer_table import Choices
from customop.schema._infer_table import Device
from customop.schema._model import Argument
from customop.schema._model import FunctionSchema
from customop.schema._model import OperatorName
from customop.schema._model import Return
from customop.schema._model import TensorKind
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

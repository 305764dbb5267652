"""customop: define, register, dispatch, fake and trace custom operators, without torch.

The public surface is exactly ``__all__``; everything else lives in private
modules. See https://customop.dev (the ``docs/`` folder) for the guides.
"""

from customop.exceptions import RegistrationError
from customop.exceptions import SchemaError
from customop.exceptions import SchemaParseError
from customop.schema import FunctionSchema
from customop.schema import MutatesArgs
from customop.schema import infer_schema
from customop.schema import parse_operator_name
from customop.schema import parse_schema
from customop.tensor import Tensor

__version__ = "0.1.0"

__all__ = [
    "FunctionSchema",
    "MutatesArgs",
    "RegistrationError",
    "SchemaError",
    "SchemaParseError",
    "Tensor",
    "infer_schema",
    "parse_operator_name",
    "parse_schema",
]

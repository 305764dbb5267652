"""Graphs of op calls: build, print, run, save (JSON) and draw (Mermaid, DOT).

A `Graph` holds placeholders (inputs), recorded op calls and one output; each
value carries `TensorMeta` (shape, dtype, device). See ``docs/tracing.md``.
"""

from typing import TYPE_CHECKING, Any

from customop.schema import load_lazily
from customop.trace._errors import GraphError
from customop.trace._graph import Graph
from customop.trace._graph import OpLike
from customop.trace._meta import Meta
from customop.trace._meta import MetaLike
from customop.trace._meta import TensorMeta
from customop.trace._meta import meta_of
from customop.trace._tracer import trace
from customop.trace._node import Node
from customop.trace._node import NodeKind
from customop.trace._node import NodeRef
from customop.trace._values import Constant
from customop.trace._values import ConstantKind

if TYPE_CHECKING:
    from customop.trace._models import ArgModel
    from customop.trace._models import GraphModel
    from customop.trace._models import NodeModel
    from customop.trace._models import TensorMetaModel

__all__ = [
    "ArgModel",
    "Constant",
    "ConstantKind",
    "Graph",
    "GraphError",
    "GraphModel",
    "Meta",
    "MetaLike",
    "Node",
    "NodeKind",
    "NodeModel",
    "NodeRef",
    "OpLike",
    "TensorMeta",
    "TensorMetaModel",
    "meta_of",
    "trace",
]


# The JSON models (pydantic) load on first use: building their classes is a
# tenth of `import customop` (issue #12), and most programs never save a graph.
_MODELS = frozenset({"ArgModel", "GraphModel", "NodeModel", "TensorMetaModel"})


def __getattr__(name: str) -> Any:
    return load_lazily(__name__, name, _MODELS, "customop.trace._models")

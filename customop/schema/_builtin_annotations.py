"""The annotations inference knows before anyone registers one, and `Device`.

``int``, ``float``, ``bool``, ``str`` and `Device` are mapped here; the tensor
layer adds ``customop.Tensor``, ``customop.Device`` and ``customop.dtype`` when
it is imported. Inference's table (`customop.schema._infer_table`) loads on the
first inference, not at ``import customop`` (issue #12), and starts from these.
"""

from __future__ import annotations

import sys
from typing import Final, NewType

__all__ = ["BUILT_IN", "Device", "add_built_in"]

Device = NewType("Device", str)
Device.__doc__ = """A device name, such as ``"cpu"`` or ``"cuda:0"``, that infers as ``Device``.

``Device`` is a ``NewType`` of ``str`` for annotations that hold device text:
write ``device: Device = "cpu"``. The parsed device class is
``customop.tensor.Device`` (``.type``, ``.index``), which the tensor layer
maps too; both infer as ``Device``.
"""
Device.__module__ = "customop.schema"

#: Annotation (a class or NewType) -> schema base type, until the table loads.
BUILT_IN: Final[dict[object, str]] = {
    int: "SymInt",
    float: "float",
    bool: "bool",
    str: "str",
    Device: "Device",
}


def add_built_in(annotation: object, schema_type: str) -> None:
    """Map one of an upper layer's own classes, at that layer's import.

    Into `BUILT_IN` while inference is unloaded, else into its table (which
    checks it as ``register_annotation`` does). ``schema_type`` must be a type
    inference produces, and ``annotation`` a class mapped nowhere yet.

    Args:
        annotation: the class.
        schema_type: the schema base type it infers as.
    """
    table = sys.modules.get("customop.schema._infer_table")
    if table is None:
        BUILT_IN[annotation] = schema_type
    else:  # the program inferred a schema before importing the layer
        table.add_annotation(annotation, schema_type)

"""``import customop`` leaves what most programs never use unbuilt (issue #12).

The pydantic views of the dispatcher, the JSON models of traced graphs, the
schema parser's regexes and schema inference cost a visible share of the
import; they are built on first use, and that first use gives the same objects
as an eager import did.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

_CHECK = """
import sys, customop
from customop.schema import _default_parser, _fastpath, _lexer, _parser
print(sorted(m for m in sys.modules if m in {modules!r}))
print(_fastpath._compiled, _default_parser._compiled, _lexer._compiled, _parser._compiled)
"""

_LAZY = (
    "customop.dispatch._inspect",
    "customop.dispatch._models",
    "customop.library._options",
    "customop.schema._infer",
    "customop.schema._infer_signature",
    "customop.schema._infer_table",
    "customop.schema._infer_walk",
    "customop.trace._lint",
    "customop.trace._models",
    "customop.trace._pictures",
    "customop.trace._printer",
    "difflib",
    "pydantic.functional_serializers",
)


def test_import_customop_builds_no_view_model_or_parser_regex() -> None:
    code = _CHECK.format(modules=set(_LAZY))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["[]", "False False False False"]


@pytest.mark.parametrize(
    ("package", "name"),
    [
        ("customop.dispatch", "DispatcherSnapshot"),
        ("customop.dispatch", "KernelInfo"),
        ("customop.dispatch", "TableEntry"),
        ("customop.trace", "GraphModel"),
        ("customop.trace", "TensorMetaModel"),
    ],
    ids=lambda value: str(value),
)
def test_lazy_names_are_the_models_themselves(package: str, name: str) -> None:
    module = importlib.import_module(package)
    models = importlib.import_module(f"{package}._models")
    assert getattr(module, name) is getattr(models, name)
    assert name in module.__all__


@pytest.mark.parametrize(
    ("package", "name"),
    [
        ("customop", "infer_schema"),
        ("customop.schema", "Choices"),
        ("customop.schema", "InferredSchema"),
        ("customop.schema", "MutatesArgs"),
        ("customop.schema", "infer_schema"),
        ("customop.schema", "infer_schema_details"),
        ("customop.schema", "register_annotation"),
    ],
    ids=lambda value: str(value),
)
def test_lazy_inference_names_are_the_functions_themselves(package: str, name: str) -> None:
    inference = importlib.import_module("customop.schema._infer")
    assert getattr(importlib.import_module(package), name) is getattr(inference, name)


_ANNOTATIONS = """
import customop
from customop.schema._infer_table import lookup_annotation
print([lookup_annotation(c) for c in (customop.Tensor, customop.Device, customop.dtype)])
"""
# A class added after inference has loaded goes into its table directly.
_LATE = """
import customop
from customop.schema._builtin_annotations import BUILT_IN, add_built_in
from customop.schema._infer_table import lookup_annotation
class Grid: ...
add_built_in(Grid, "Tensor")
print(Grid in BUILT_IN, lookup_annotation(Grid))
"""


def test_the_tensor_layer_maps_its_annotations_without_loading_inference() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _ANNOTATIONS], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "['Tensor', 'Device', 'ScalarType']"


def test_a_class_added_after_inference_loaded_goes_into_its_table() -> None:
    done = subprocess.run([sys.executable, "-c", _LATE], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False Tensor"


@pytest.mark.parametrize(
    "package", ["customop", "customop.dispatch", "customop.schema", "customop.trace"]
)
def test_unknown_names_still_raise_attribute_error(package: str) -> None:
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
        getattr(importlib.import_module(package), "NoSuchName")  # noqa: B009 -- the name is the point

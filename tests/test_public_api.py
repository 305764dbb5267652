"""The public surface changes only on purpose: this test pins it."""

from __future__ import annotations

import importlib

import pytest

import customop

PUBLIC = {
    "customop": [
        "CodegenError",
        "CustomOpDef",
        "DebugCheckError",
        "DispatchKey",
        "DispatchKeyError",
        "DispatchKeySet",
        "Dispatcher",
        "FunctionSchema",
        "KernelOverrideWarning",
        "Library",
        "MissingKernelError",
        "MutatesArgs",
        "OpOverload",
        "OpOverloadPacket",
        "OperatorHandle",
        "RegistrationError",
        "RegistrationHandle",
        "SchemaError",
        "SchemaParseError",
        "Tensor",
        "UnknownOperatorError",
        "below",
        "custom_op",
        "debug_checks",
        "dispatcher",
        "exclude_keys",
        "fallthrough",
        "include_keys",
        "infer_schema",
        "library",
        "library_fragment",
        "library_impl",
        "ops",
        "parse_operator_name",
        "parse_schema",
        "register_fake",
        "register_kernel",
    ],
    "customop.dispatch": [
        "ArrayTypeInfo",
        "DispatchKey",
        "DispatchKeySet",
        "Dispatcher",
        "DispatcherSnapshot",
        "Epoch",
        "EpochClock",
        "FallbackInfo",
        "Kernel",
        "KernelInfo",
        "LibraryInfo",
        "LibraryKind",
        "LocalKeysGuard",
        "OperatorHandle",
        "OperatorInfo",
        "OperatorListener",
        "Reason",
        "RegistrationHandle",
        "TableEntry",
        "below",
        "epoch",
        "exclude_keys",
        "fallthrough",
        "include_keys",
        "local_keys",
    ],
    "customop.exceptions": [
        "CodegenError",
        "DispatchKeyError",
        "KernelOverrideWarning",
        "MissingKernelError",
        "RegistrationError",
        "SchemaError",
        "SchemaParseError",
        "UnknownOperatorError",
    ],
    "customop.library": [
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
        "register_fake",
        "register_kernel",
    ],
    "customop.schema": [
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
    ],
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_all_is_pinned_and_sorted(module: str) -> None:
    names = importlib.import_module(module).__all__
    assert names == sorted(names)
    assert names == PUBLIC[module]


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_exported_name_exists(module: str) -> None:
    loaded = importlib.import_module(module)
    missing = [name for name in loaded.__all__ if not hasattr(loaded, name)]
    assert missing == []


def test_version() -> None:
    assert customop.__version__.count(".") == 2

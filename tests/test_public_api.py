"""The public surface changes only on purpose: this test pins it."""

from __future__ import annotations

import importlib

import pytest

import customop

PUBLIC = {
    "customop": [
        "FunctionSchema",
        "MutatesArgs",
        "RegistrationError",
        "SchemaError",
        "SchemaParseError",
        "Tensor",
        "infer_schema",
        "parse_operator_name",
        "parse_schema",
    ],
    "customop.exceptions": ["RegistrationError", "SchemaError", "SchemaParseError"],
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


def test_schema_package_all_is_sorted() -> None:
    import customop.schema

    assert customop.schema.__all__ == sorted(customop.schema.__all__)


def test_version() -> None:
    assert customop.__version__.count(".") == 2

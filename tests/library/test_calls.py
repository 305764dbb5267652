"""Calling ops: binding, defaults, and the TypeError every kind of bad argument gets."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from customop.dispatch import Dispatcher
from customop.library import Library, OpOverload, Ops

SCHEMA = (
    "mylib::every(Tensor x, Tensor? bias, Tensor[] xs, int n, SymInt s, float f, bool b, "
    "str name, Scalar alpha, ScalarType dtype, Device device, int? maybe, int[2] pair, "
    "*, float scale=1.) -> Tensor"
)
GOOD: dict[str, Any] = {
    "x": np.zeros(2),
    "bias": None,
    "xs": [np.zeros(1)],
    "n": 1,
    "s": 2,
    "f": 0.5,
    "b": True,
    "name": "a",
    "alpha": 2,
    "dtype": np.float32,
    "device": "cpu",
    "maybe": None,
    "pair": [1, 2],
}


@pytest.fixture
def every(dispatcher: Dispatcher, ops: Ops) -> Iterator[OpOverload]:
    with Library("mylib", "DEF", dispatcher=dispatcher) as lib:
        lib.define(SCHEMA)
        lib.impl("every", lambda *args, **kwargs: (args, kwargs), "CPU")
        yield ops.mylib.every.default


def _call(op: OpOverload, **changes: Any) -> Any:
    return op(**{**GOOD, **changes})


def test_good_call_binds_positionally_with_defaults(every: OpOverload) -> None:
    args, kwargs = _call(every)
    assert len(args) == 13 and kwargs == {"scale": 1.0}
    args, kwargs = every(*GOOD.values(), scale=3.0)
    assert kwargs == {"scale": 3.0}


def test_signature_shows_the_schema(every: OpOverload) -> None:
    signature = inspect.signature(every)
    assert list(signature.parameters)[:3] == ["x", "bias", "xs"]
    assert signature.parameters["scale"].kind is inspect.Parameter.KEYWORD_ONLY
    assert signature.parameters["scale"].default == 1.0


@pytest.mark.parametrize(
    ("name", "value", "position", "expected", "got", "hint"),
    [
        (
            "x",
            3,
            "position 0",
            "Tensor",
            "int 3",
            "Pass an array of a registered type (numpy.ndarray is built in).",
        ),
        (
            "bias",
            "b",
            "position 1",
            "Tensor?",
            "str 'b'",
            "Pass an array of a registered type (numpy.ndarray is built in) or None.",
        ),
        (
            "xs",
            [1],
            "position 2",
            "Tensor[]",
            "list [1]",
            "Pass a list or tuple whose elements are Tensor.",
        ),
        ("n", 1.5, "position 3", "int", "float 1.5", "Pass a value of type int."),
        ("n", True, "position 3", "int", "bool True", "Pass a value of type int."),
        ("s", "2", "position 4", "SymInt", "str '2'", "Pass a value of type SymInt."),
        ("f", "x", "position 5", "float", "str 'x'", "Pass a value of type float."),
        ("b", 1, "position 6", "bool", "int 1", "Pass a value of type bool."),
        ("name", 1, "position 7", "str", "int 1", "Pass a value of type str."),
        ("alpha", "2", "position 8", "Scalar", "str '2'", "Pass a value of type Scalar."),
        (
            "dtype",
            "float32",
            "position 9",
            "ScalarType",
            "str 'float32'",
            "Pass a dtype, e.g. numpy.float32.",
        ),
        ("device", 0, "position 10", "Device", "int 0", "Pass a value of type Device."),
        ("maybe", "1", "position 11", "int?", "str '1'", "Pass a value of type int or None."),
        (
            "pair",
            [1, "2"],
            "position 12",
            "int[2]",
            "list [1, '2']",
            "Pass a list or tuple whose elements are int.",
        ),
        ("scale", None, "keyword-only", "float", "NoneType None", "Pass a value of type float."),
    ],
    ids=lambda v: v if isinstance(v, str) and " " not in v else None,
)
def test_wrong_argument_names_op_parameter_position_type_value_schema(  # noqa: PLR0917
    every: OpOverload, name: str, value: Any, position: str, expected: str, got: str, hint: str
) -> None:
    with pytest.raises(TypeError) as excinfo:
        _call(every, **{name: value})
    assert str(excinfo.value) == (
        f"ops.mylib.every.default: argument {name!r} ({position}) expects {expected}, got {got}. "
        f"The schema is {SCHEMA.replace('scale=1.', 'scale=1.')}. {hint}"
    )


def test_fixed_size_int_list_accepts_one_int(every: OpOverload) -> None:
    args, _ = _call(every, pair=3)
    assert args[12] == 3


def test_numpy_scalars_count_as_python_numbers(every: OpOverload) -> None:
    _call(every, n=np.int64(1), f=np.float32(0.5), b=np.bool_(True), alpha=np.float64(1))


def test_missing_argument(every: OpOverload) -> None:
    values = dict(GOOD)
    del values["n"]
    with pytest.raises(TypeError) as excinfo:
        every(**values)
    assert str(excinfo.value) == (
        f"ops.mylib.every.default: missing required argument 'n' (position 3, int). "
        f"The schema is {SCHEMA}. Pass a value for it."
    )


def test_too_many_arguments(every: OpOverload) -> None:
    with pytest.raises(TypeError) as excinfo:
        every(*GOOD.values(), 1.0)
    assert str(excinfo.value) == (
        f"ops.mylib.every.default: takes 13 positional argument(s) but 14 were given. "
        f"The schema is {SCHEMA}. Pass keyword-only arguments by name, and drop the extra ones."
    )


def test_unknown_keyword_gets_pythons_message_naming_the_op(every: OpOverload) -> None:
    # Explaining it against the schema would need a **kwargs catch-all: a dict
    # allocated on every call (see _callgen). Python's message names op and keyword.
    with pytest.raises(TypeError) as excinfo:
        _call(every, sclae=2.0)
    assert str(excinfo.value) == "mylib::every() got an unexpected keyword argument 'sclae'"


def test_fast_path_still_checks_after_caching(dispatcher: Dispatcher, ops: Ops) -> None:
    with Library("fast", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x, int n) -> Tensor")
        lib.impl("f", lambda x, n: x * n, "CPU")
        op = ops.fast.f.default
        for _ in range(3):
            np.testing.assert_array_equal(op(np.ones(1), 2), [2.0])
        with pytest.raises(TypeError, match="argument 'n'"):
            op(np.ones(1), 2.5)
        with pytest.raises(TypeError, match="missing required argument 'n'"):
            op(np.ones(1))

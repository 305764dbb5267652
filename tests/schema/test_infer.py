"""infer_schema beyond the oracle: the annotation table, choices, registration, errors.

This module uses ``from __future__ import annotations``, so every function
defined here has string annotations that infer_schema must resolve.
"""

# ruff: noqa: UP007, UP045 -- the tests spell Optional[...] and Union[...] as users write them

from __future__ import annotations

import enum
import functools
import subprocess
import sys
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Optional, Union

import numpy
import pytest

import customop.tensor
from customop.exceptions import RegistrationError, SchemaError
from customop.schema import (
    Choices,
    Device,
    MutatesArgs,
    infer_schema,
    infer_schema_details,
    parse_schema,
    register_annotation,
)

Array = numpy.ndarray


class Mode(enum.Enum):
    MEAN = "mean"
    SUM = "sum"


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Reduction(str, enum.Enum):
    NONE = "none"
    MEAN = "mean"


def _text(annotation: object, default: object = None) -> str:
    """The schema text of a one-parameter function annotated ``annotation``."""

    def f(x: Any) -> None: ...

    f.__annotations__ = {"x": annotation, "return": None}
    if default is not None:
        f.__defaults__ = (default,)
    return infer_schema(f, mutates_args=()).format("source")


# The inference table: annotation -> schema type (the docs' table comes from here).
TABLE = [
    (Array, "Tensor"),
    (customop.tensor.Tensor, "Tensor"),
    (Optional[Array], "Tensor?"),
    (Array | None, "Tensor?"),
    (list[Array], "Tensor[]"),
    (Sequence[Array], "Tensor[]"),
    (list[Optional[Array]], "Tensor?[]"),
    (Optional[list[Array]], "Tensor[]?"),
    (int, "SymInt"),
    (Optional[int], "SymInt?"),
    (list[int], "SymInt[]"),
    (Optional[Sequence[int]], "SymInt[]?"),
    (list[list[int]], "SymInt[][]"),
    (Optional[list[list[int]]], "SymInt[][]?"),
    (float, "float"),
    (list[float], "float[]"),
    (list[list[float]], "float[][]"),
    (bool, "bool"),
    (list[bool], "bool[]"),
    (str, "str"),
    (Optional[str], "str?"),
    (list[str], "str[]"),
    (Optional[list[str]], "str[]?"),
    (Union[int, float, bool], "Scalar"),
    (int | float | bool, "Scalar"),
    (Optional[Union[bool, int, float]], "Scalar?"),
    (list[Union[int, float, bool]], "Scalar[]"),
    (numpy.dtype, "ScalarType"),
    (numpy.dtype[Any], "ScalarType"),
    (Optional[numpy.dtype], "ScalarType?"),
    (Device, "Device"),
    (Optional[Device], "Device?"),
    (Literal["mean", "sum"], "str"),
    (Optional[Literal["mean", "sum"]], "str?"),
    (Mode, "str"),
    (list[Mode], "str[]"),
    (Annotated[int, "a note"], "SymInt"),
    ("numpy.ndarray", "Tensor"),
    ("list['Array']", "Tensor[]"),
]


@pytest.mark.parametrize(("annotation", "expected"), TABLE, ids=[repr(a) for a, _ in TABLE])
def test_annotation_table(annotation: object, expected: str) -> None:
    assert _text(annotation) == f"({expected} x) -> ()"


UNSUPPORTED = [
    (dict[str, int], "which has no schema type"),
    (list[dict[str, int]], "whose part dict[str, int] has no schema type"),
    (tuple[int, int], "which is a tuple"),
    (Union[int, str], "which is a Union with no schema type"),
    (Union[int, float], "which is a Union with no schema type"),
    (list[Optional[int]], "which would be the schema type SymInt?[]"),
    (Optional[list[Optional[Array]]], "which would be the schema type Tensor?[]?"),
    (list[list[Array]], "which would be the schema type Tensor[][]"),
    (list[Union[int, float, bool, None]], "which would be the schema type Scalar?[]"),
    (Optional[list[Union[int, float, bool]]], "which would be the schema type Scalar[]?"),
    (list[numpy.dtype], "which would be the schema type ScalarType[]"),
    (list[list[str]], "which would be the schema type str[][]"),
    (Literal[1, 2], "which has values that are not all str"),
    (list, "which is a list without an element type"),
    (complex, "which has no schema type"),
    (numpy.generic, "which has no schema type"),
]


@pytest.mark.parametrize(("annotation", "what"), UNSUPPORTED, ids=[repr(a) for a, _ in UNSUPPORTED])
def test_unsupported_annotations_name_the_parameter(annotation: object, what: str) -> None:
    with pytest.raises(SchemaError) as caught:
        _text(annotation)
    prefix = "infer_schema: parameter 'x' of function '_text.<locals>.f' "
    assert str(caught.value).startswith(f"{prefix}is annotated {annotation!r}, {what}. ")


def scale(x: Array, alpha: float = 1.0, *, out_dtype: Optional[numpy.dtype] = None) -> Array:
    return x


def test_future_annotations_and_names() -> None:
    schema = infer_schema(scale, mutates_args=(), op_name="mylib::scale.Tensor")
    assert str(schema.name) == "mylib::scale.Tensor"
    assert format(schema, "source") == (
        "mylib::scale.Tensor(Tensor x, float alpha=1.0, *, ScalarType? out_dtype=None) -> Tensor"
    )
    assert str(schema) == (
        "mylib::scale.Tensor(Tensor x, float alpha=1., *, ScalarType? out_dtype=None) -> Tensor"
    )
    assert infer_schema(scale, mutates_args=()).name is None


def test_a_name_local_to_a_function_does_not_resolve() -> None:
    class Local:
        pass

    def f(x: Local) -> None: ...

    with pytest.raises(SchemaError, match="name 'Local' is not defined"):
        infer_schema(f, mutates_args=())


def test_bad_op_name() -> None:
    with pytest.raises(SchemaError) as caught:
        infer_schema(scale, mutates_args=(), op_name="mylib::scale.default")
    assert str(caught.value).startswith(
        "infer_schema: op_name 'mylib::scale.default' is not an operator name ("
    )
    assert str(caught.value).endswith(". Write it as 'ns::name' or 'ns::name.overload'.")


DEFAULTS = [
    (float, -2.5, "float x=-2.5", "float x=-2.5"),
    (float, 2, "float x=2", "float x=2."),
    (float, float("-inf"), "float x=-inf", "float x=-inf"),
    (float, float("nan"), "float x=nan", "float x=nan"),
    (float, numpy.float64(0.1), "float x=0.1", "float x=0.10000000000000001"),
    (int, -1, "SymInt x=-1", "SymInt x=-1"),
    (bool, False, "bool x=False", "bool x=False"),
    (Union[int, float, bool], True, "Scalar x=True", "Scalar x=True"),
    (Union[int, float, bool], 0.5, "Scalar x=0.5", "Scalar x=0.5"),
    (str, 'a"b\n', 'str x="a\\"b\\n"', 'str x="a\\"b\\n"'),
    (str, "é", 'str x="\\303\\251"', 'str x="\\303\\251"'),
    (numpy.dtype, numpy.dtype("float64"), "ScalarType x=float64", "ScalarType x=7"),
    (numpy.dtype, numpy.int32, "ScalarType x=int32", "ScalarType x=3"),
    (numpy.dtype, numpy.dtype(bool), "ScalarType x=bool", "ScalarType x=11"),
    (Device, "cuda:0", 'Device x="cuda:0"', 'Device x="cuda:0"'),
    (Literal["mean", "sum"], "sum", 'str x="sum"', 'str x="sum"'),
    (Mode, Mode.SUM, 'str x="sum"', 'str x="sum"'),
    (Reduction, Reduction.MEAN, 'str x="mean"', 'str x="mean"'),
    (Color, Color.GREEN, 'str x="GREEN"', 'str x="GREEN"'),
]


@pytest.mark.parametrize(("annotation", "default", "source", "canonical"), DEFAULTS)
def test_defaults(annotation: object, default: object, source: str, canonical: str) -> None:
    def f(x: Any) -> None: ...

    f.__annotations__ = {"x": annotation, "return": None}
    f.__defaults__ = (default,)
    schema = infer_schema(f, mutates_args=())
    assert format(schema, "source") == f"({source}) -> ()"
    assert str(schema) == f"({canonical}) -> ()"
    assert parse_schema(str(schema)) == schema
    assert parse_schema(format(schema, "source")) == schema


BAD_DEFAULTS = [
    (int, True, "has the default True, which does not fit its schema type SymInt"),
    (int, 1.5, "has the default 1.5, which does not fit its schema type SymInt"),
    (bool, 1, "has the default 1, which does not fit its schema type bool"),
    (str, Mode.SUM, "has the default <Mode.SUM: 'sum'>, which does not fit its schema type str"),
    (Mode, "max", "has the default 'max', which does not fit its schema type str"),
    (
        numpy.dtype,
        numpy.dtype("U"),
        "has the default dtype('<U'), which does not fit its schema type ScalarType",
    ),
    (
        numpy.dtype,
        "float32",
        "has the default 'float32', which does not fit its schema type ScalarType",
    ),
    (Device, 0, "has the default 0, which does not fit its schema type Device"),
    (int, None, "defaults to None, but its schema type SymInt is not optional"),
    (Optional[list[int]], (1,), "has the default (1,), for the list type SymInt[]?"),
]


@pytest.mark.parametrize(("annotation", "default", "what"), BAD_DEFAULTS)
def test_bad_defaults(annotation: object, default: object, what: str) -> None:
    def f(x: Any = ...) -> None: ...

    f.__annotations__ = {"x": annotation, "return": None}
    f.__defaults__ = (default,)
    with pytest.raises(SchemaError) as caught:
        infer_schema(f, mutates_args=())
    function = "test_bad_defaults.<locals>.f"
    assert str(caught.value).startswith(
        f"infer_schema: parameter 'x' of function {function!r} {what}. "
    )


def test_literal_choice_error_lists_the_values() -> None:
    def f(mode: Literal["mean", "sum"] = "max") -> None: ...

    with pytest.raises(SchemaError) as caught:
        infer_schema(f, mutates_args=())
    assert str(caught.value).endswith(
        ". Make the default one of 'mean', 'sum', or change the annotation."
    )


def reduce(
    x: Array,
    mode: Mode = Mode.MEAN,
    how: Optional[Literal["l1", "l2"]] = None,
    colors: Optional[Sequence[Color]] = None,
    name: str = "",
) -> Array:
    return x


def test_choices_are_returned_alongside_the_schema() -> None:
    found = infer_schema_details(reduce, mutates_args=())
    assert format(found.schema, "source") == (
        '(Tensor x, str mode="mean", str? how=None, str[]? colors=None, str name="") -> Tensor'
    )
    assert dict(found.choices) == {
        "mode": Choices(("mean", "sum"), Mode),
        "how": Choices(("l1", "l2")),
        "colors": Choices(("RED", "GREEN"), Color),
    }
    with pytest.raises(TypeError):
        found.choices["name"] = Choices(("a",))  # type: ignore[index]  # the mapping is read-only


def test_choices_convert_back_for_the_kernel() -> None:
    assert Choices(("mean", "sum"), Mode).to_python("sum") is Mode.SUM
    assert Choices(("RED", "GREEN"), Color).to_python("RED") is Color.RED
    assert Choices(("l1", "l2")).to_python("l2") == "l2"
    with pytest.raises(ValueError, match=r"^Choices: 'max' is not one of 'mean', 'sum'\.$"):
        Choices(("mean", "sum"), Mode).to_python("max")


def test_infer_schema_details_of_a_plain_function() -> None:
    found = infer_schema_details(scale, mutates_args=())
    assert found.schema == infer_schema(scale, mutates_args=())
    assert dict(found.choices) == {}


# --- mutates_args ------------------------------------------------------------------------


def update(
    x: Array, buf: Optional[Array], xs: list[Array], maybe: Optional[list[Array]], n: int
) -> None: ...


@pytest.mark.parametrize(
    "mutates", [["x", "xs"], ("xs", "x"), {"x", "xs"}, dict.fromkeys(["x", "xs"]), iter("x")]
)
def test_mutates_args_takes_any_collection_of_names(mutates: Any) -> None:
    schema = infer_schema(update, mutates_args=mutates)
    assert set(schema.mutated_arguments) <= {"x", "xs"}
    assert "x" in schema.mutated_arguments


def test_unknown_marks_every_tensor_argument() -> None:
    schema = infer_schema(update, mutates_args=MutatesArgs.UNKNOWN)
    assert format(schema, "source") == (
        "(Tensor(a0!) x, Tensor(a1!)? buf, Tensor(a2!)[] xs, Tensor(a3!)[]? maybe, SymInt n) -> ()"
    )
    assert schema.mutated_arguments == ("x", "buf", "xs", "maybe")


MUTATES_ERRORS = [
    (
        ["x", "y", "z"],
        "infer_schema: mutates_args of function 'update' names 'y', 'z', which are not among "
        "its parameters ('x', 'buf', 'xs', 'maybe', 'n'): {'y', 'z'} in mutates_args were not "
        "found. Only the function's own arguments can be mutated. Correct or remove the names.",
    ),
    (
        ["n"],
        "infer_schema: parameter 'n' of function 'update' is in mutates_args but has the schema "
        "type SymInt (annotation <class 'int'>). Only tensor arguments can be mutated in place. "
        "Remove 'n' from mutates_args, or return the new value instead.",
    ),
    (
        "unknown",
        "infer_schema: mutates_args of function 'update' is 'unknown', not a collection of "
        "parameter names. A string would read as one-letter names. Pass the names, as in "
        "['x'], [] when nothing is mutated, or MutatesArgs.UNKNOWN when you do not know "
        "(torch's 'unknown').",
    ),
    (
        None,
        "infer_schema: mutates_args of function 'update' is None, not a collection of "
        "parameter names. A string would read as one-letter names. Pass the names, as in "
        "['x'], [] when nothing is mutated, or MutatesArgs.UNKNOWN when you do not know "
        "(torch's 'unknown').",
    ),
    (
        ["x", 0],
        "infer_schema: mutates_args of function 'update' contains 0, which is not a str. "
        "mutates_args holds parameter names. Pass names, as in ['x'].",
    ),
]


@pytest.mark.parametrize(("mutates", "message"), MUTATES_ERRORS, ids=lambda v: repr(v)[:20])
def test_mutates_args_errors(mutates: Any, message: str) -> None:
    with pytest.raises(SchemaError) as caught:
        infer_schema(update, mutates_args=mutates)
    assert str(caught.value) == message


def test_mutates_args_on_a_function_without_parameters() -> None:
    def f() -> None: ...

    with pytest.raises(SchemaError, match=r"which is not among its parameters \(it has none\)"):
        infer_schema(f, mutates_args=["x"])


# --- signatures --------------------------------------------------------------------------


def test_wrapped_functions_methods_and_partials() -> None:
    @functools.wraps(scale)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return scale(*args, **kwargs)

    class Op:
        def kernel(self, x: Array, n: int = 2) -> Array:
            return x

    expected = "(Tensor x, float alpha=1.0, *, ScalarType? out_dtype=None) -> Tensor"
    assert format(infer_schema(wrapper, mutates_args=()), "source") == expected
    bound = Op().kernel
    assert (
        format(infer_schema(bound, mutates_args=()), "source") == "(Tensor x, SymInt n=2) -> Tensor"
    )
    partial = functools.partial(scale, alpha=2.0)
    assert format(infer_schema(partial, mutates_args=()), "source") == (
        "(Tensor x, *, float alpha=2.0, ScalarType? out_dtype=None) -> Tensor"
    )


def test_unreadable_signature() -> None:
    with pytest.raises(SchemaError, match=r"^infer_schema: the signature of <class 'dict'> "):
        infer_schema(dict, mutates_args=())


def test_non_ascii_parameter_name() -> None:
    namespace: dict[str, Any] = {}
    exec("def f(\u00e9: int) -> None: ...", namespace)
    with pytest.raises(SchemaError, match="is not an ASCII identifier"):
        infer_schema(namespace["f"], mutates_args=())


RETURNS = [
    (None, "()"),
    (tuple[()], "()"),
    (tuple[Array], "((Tensor))"),
    (tuple[Array, int], "(Tensor, SymInt)"),
    (list[customop.tensor.Tensor], "Tensor[]"),
    (Union[bool, float, int], "Scalar"),
]


@pytest.mark.parametrize(("annotation", "returns"), RETURNS, ids=[repr(a) for a, _ in RETURNS])
def test_returns(annotation: object, returns: str) -> None:
    def f() -> None: ...

    f.__annotations__ = {"return": annotation}
    assert str(infer_schema(f, mutates_args=())) == f"() -> {returns}"


@pytest.mark.parametrize(
    ("annotation", "what"),
    [
        (tuple, "is annotated <class 'tuple'>, which is a tuple without element types"),
        (
            tuple[Array, tuple[Array]],
            "is annotated tuple[numpy.ndarray, tuple[numpy.ndarray]], whose part "
            "tuple[numpy.ndarray] is a tuple",
        ),
        (
            list[list[Array]],
            "is annotated list[list[numpy.ndarray]], which would be the schema type Tensor[][]",
        ),
        (Literal["a"], "is annotated typing.Literal['a'], which would be the schema type str"),
    ],
)
def test_bad_returns(annotation: object, what: str) -> None:
    def f() -> None: ...

    f.__annotations__ = {"return": annotation}
    with pytest.raises(SchemaError) as caught:
        infer_schema(f, mutates_args=())
    function = "test_bad_returns.<locals>.f"
    assert str(caught.value).startswith(
        f"infer_schema: the return value of function {function!r} {what}. "
    )


# --- registration ------------------------------------------------------------------------


class MyArray:
    """A user array type."""


def test_register_annotation_and_undo() -> None:
    def f(x: MyArray, xs: list[MyArray]) -> MyArray: ...

    with pytest.raises(SchemaError, match="has no schema type"):
        infer_schema(f, mutates_args=())
    undo = register_annotation(MyArray, "Tensor")
    try:
        assert str(infer_schema(f, mutates_args=["x"])) == "(Tensor(a0!) x, Tensor[] xs) -> Tensor"
        with pytest.raises(RegistrationError, match="is already registered as 'Tensor'"):
            register_annotation(MyArray, "Tensor")
    finally:
        undo()
    undo()  # idempotent
    with pytest.raises(SchemaError, match="has no schema type"):
        infer_schema(f, mutates_args=())


def test_a_second_undo_leaves_a_newer_registration() -> None:
    undo = register_annotation(MyArray, "Tensor")
    undo()
    again = register_annotation(MyArray, "Device")
    try:
        undo()
        assert _text(MyArray) == "(Device x) -> ()"
    finally:
        again()


@pytest.mark.parametrize(
    ("annotation", "schema_type", "message"),
    [
        (
            MyArray,
            "Layout",
            "register_annotation: schema type 'Layout' for "
            "<class 'tests.schema.test_infer.MyArray'> is not one that infer_schema produces. "
            "Only these types have inference rules. Use one of 'Tensor', 'SymInt', 'float', "
            "'bool', 'str', 'Scalar', 'ScalarType', 'Device'.",
        ),
        (
            int,
            "Tensor",
            "register_annotation: <class 'int'> is already registered as 'SymInt'. One annotation "
            "has one schema type. Call the function the earlier registration returned to remove "
            "it first.",
        ),
        (
            list[MyArray],
            "Tensor",
            "register_annotation: list[tests.schema.test_infer.MyArray] is a generic form, which "
            "infer_schema reads by its structure. Only plain classes and NewTypes map to one "
            "schema type. Register the class itself, as in numpy.ndarray rather than "
            "numpy.ndarray[Any, Any].",
        ),
    ],
)
def test_register_annotation_errors(annotation: object, schema_type: str, message: str) -> None:
    with pytest.raises(RegistrationError) as caught:
        register_annotation(annotation, schema_type)
    assert str(caught.value) == message


def test_enum_classes_are_generic_forms() -> None:
    with pytest.raises(RegistrationError, match="is a generic form"):
        register_annotation(Mode, "str")


# --- torch -------------------------------------------------------------------------------


def test_customop_never_imports_torch() -> None:
    code = "\n".join(
        [
            "import sys, numpy, customop, customop.schema, customop.tensor",
            "from customop.schema import infer_schema",
            "def f(x: customop.tensor.Tensor, d: numpy.dtype, n: 'Unknown') -> None: ...",
            "try:",
            "    infer_schema(f, mutates_args=())",
            "except ValueError:",
            "    pass",
            "assert 'torch' not in sys.modules, 'customop imported torch'",
        ]
    )
    subprocess.run([sys.executable, "-c", code], check=True)


TORCH_SOURCE = """
cuda1 = torch.device("cuda", 1)

def f(
    x: torch.Tensor,
    xs: list[torch.Tensor],
    dtype: torch.dtype = torch.bfloat16,
    device: torch.device = cuda1,
    alpha: torch.types.Number = 1,
) -> tuple[torch.Tensor, torch.Tensor]: ...
"""


def test_torch_types_when_torch_is_imported() -> None:
    torch = pytest.importorskip("torch")
    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(TORCH_SOURCE, "<torch types>", "exec", dont_inherit=True), namespace)
    schema = infer_schema(namespace["f"], mutates_args=["x"])
    assert format(schema, "source") == (
        '(Tensor(a0!) x, Tensor[] xs, ScalarType dtype=bfloat16, Device device="cuda:1", '
        "Scalar alpha=1) -> (Tensor, Tensor)"
    )
    assert str(schema).startswith("(Tensor(a0!) x, Tensor[] xs, ScalarType dtype=15, ")

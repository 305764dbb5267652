"""The schema models: invariants, hashing, JSON, and the convenience properties."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from customop.exceptions import SchemaError
from customop.schema import (
    AliasInfo,
    Argument,
    BaseType,
    ClassType,
    Default,
    DictType,
    FunctionSchema,
    ListType,
    OperatorName,
    OptionalType,
    Return,
    UnionType,
    VarType,
    parse_schema,
)

INT = BaseType(name="int")
TENSOR = BaseType(name="Tensor")

INVALID: list[tuple[str, Callable[[], object], str]] = [
    (
        "argument-name",
        lambda: Argument(name="x y", type=INT),
        "Argument: name: name 'x y' is not an identifier. "
        "Argument names use letters, digits and underscores.",
    ),
    (
        "unknown-type",
        lambda: BaseType(name="Tensr"),
        "BaseType: name: unknown type name 'Tensr'. Did you mean 'Tensor'?",
    ),
    (
        "default-type",
        lambda: Argument(name="x", type=INT, default=Default(value=1.5)),
        "Argument: argument 'x': default 1.5 does not fit type int: "
        "1.5 is not a value of type int.",
    ),
    (
        "none-default-needs-optional",
        lambda: Argument(
            name="dims", type=ListType(elem=BaseType(name="SymInt")), default=Default(value=None)
        ),
        "Argument: argument 'dims': default None does not fit type SymInt[]: "
        "None is only a default for an optional type; write SymInt[]? to allow None.",
    ),
    (
        "overload-default",
        lambda: OperatorName(namespace="ns", name="f", overload="default"),
        "OperatorName: overload: overload 'default' is illegal: 'default' names the "
        "overload-less op (ns::name) and cannot be an overload name.",
    ),
    (
        "overload-dunder",
        lambda: OperatorName(namespace="ns", name="f", overload="__call__"),
        "OperatorName: overload: overload '__call__' is illegal: overload names starting "
        "with '__' are reserved for Python attributes.",
    ),
    (
        "namespace",
        lambda: OperatorName(namespace="my-lib", name="f"),
        "OperatorName: namespace: namespace 'my-lib' is not an identifier. "
        "Use letters, digits and underscores, like 'mylib'.",
    ),
    (
        "duplicate-arguments",
        lambda: FunctionSchema(arguments=(Argument(name="x", type=INT),) * 2),
        "FunctionSchema: argument name 'x' appears twice; argument names must be unique.",
    ),
    (
        "kwarg-only-order",
        lambda: FunctionSchema(
            arguments=(Argument(name="a", type=INT, kwarg_only=True), Argument(name="b", type=INT))
        ),
        "FunctionSchema: positional argument 'b' follows a keyword-only one; "
        "keyword-only arguments come after '*'.",
    ),
    (
        "nested-path",
        lambda: FunctionSchema.model_validate(
            {"arguments": [{"name": "x", "type": {"kind": "base", "name": "Tensr"}}]}
        ),
        "FunctionSchema: arguments.0.type.name: unknown type name 'Tensr'. Did you mean 'Tensor'?",
    ),
    (
        "alias-set-name",
        lambda: AliasInfo(before=("a b",)),
        "AliasInfo: before: alias set 'a b' is not an identifier or '*'. "
        "Alias sets are written like (a), (a!) or (a -> *).",
    ),
    (
        "alias-bare-needs-write",
        lambda: AliasInfo(before=(), is_write=False),
        "AliasInfo: before set is empty but after=(), is_write=False. Only the bare write "
        "shorthand '!' has no named set; name the set, e.g. (a!).",
    ),
    (
        "list-size",
        lambda: ListType(elem=INT, size=-1),
        "ListType: size: size -1 is negative. Write T[N] with N >= 0.",
    ),
    (
        "union-size",
        lambda: UnionType(elems=(INT,)),
        "UnionType: elems: elems has 1 member(s). A Union needs at least two.",
    ),
    (
        "type-var",
        lambda: VarType(name="Tensor"),
        "VarType: name: 'Tensor' is not a type variable name. Type variables are lower-case "
        "identifiers that are not type names, like 't'.",
    ),
    (
        "class-name",
        lambda: ClassType(qualified_name="torch.classes.x.Y"),
        "ClassType: qualified_name: 'torch.classes.x.Y' is not a qualified class name. "
        "Write it as __torch__.torch.classes.<ns>.<Name>.",
    ),
]


@pytest.mark.parametrize(
    ("build", "message"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid_models_raise_schema_error(build: Callable[[], object], message: str) -> None:
    with pytest.raises(SchemaError) as excinfo:
        build()
    assert str(excinfo.value) == message
    assert isinstance(excinfo.value, ValueError)


def test_schema_error_carries_the_field_path() -> None:
    with pytest.raises(SchemaError) as excinfo:
        FunctionSchema.model_validate({"arguments": [{"name": "x", "type": {"kind": "nope"}}]})
    assert excinfo.value.loc == ("arguments", "0", "type")


def test_models_are_frozen_and_hashable() -> None:
    schema = parse_schema("ns::f(Tensor x, int[2] k=1) -> Tensor")
    with pytest.raises(ValueError, match="frozen"):
        schema.arguments[0].name = "y"  # type: ignore[misc]
    assert hash(schema) == hash(parse_schema(str(schema)))
    assert len({schema, parse_schema(str(schema))}) == 1


def test_parser_builds_what_the_constructors_build() -> None:
    built = FunctionSchema(
        name=OperatorName(namespace="ns", name="f", overload="out"),
        arguments=(
            Argument(name="x", type=TENSOR),
            Argument(name="k", type=OptionalType(elem=INT), default=Default(value=None)),
            Argument(
                name="out",
                type=BaseType(name="Tensor", alias=AliasInfo(before=("a",), is_write=True)),
                kwarg_only=True,
            ),
        ),
        returns=(
            Return(type=BaseType(name="Tensor", alias=AliasInfo(before=("a",), is_write=True))),
        ),
    )
    assert (
        parse_schema("ns::f.out(Tensor x, int? k=None, *, Tensor(a!) out) -> Tensor(a!)") == built
    )
    assert str(built) == "ns::f.out(Tensor x, int? k=None, *, Tensor(a!) out) -> Tensor(a!)"


JSON_CASES = [
    'ns::f.ov(Tensor(a!) x, Tensor?[] y, *, float eps=1e-05, str m="a\\"b", int[2] k=1)'
    " -> (Tensor(a!), (int, int) p)",
    "ns::g(Dict(str, t)(a!) d, Union(int, str) u, Future(int) f, t[](b) l, Tensor! o, int!? q,"
    " ...) -> ...",
    "ns::h(complex c=1j, float z=inf, float w=-inf, float n=nan, Any d=None, Scalar s=True) -> ()",
    "__init__(__torch__.torch.classes.c10d.Work _0) -> NoneType _0",
    "(Tensor x, ScalarType dtype=long, MemoryFormat m=contiguous_format) -> Tensor",
]


@pytest.mark.parametrize(
    "text", JSON_CASES, ids=["out", "containers", "special-floats", "class", "anonymous"]
)
def test_json_round_trip(text: str) -> None:
    schema = parse_schema(text)
    again = FunctionSchema.model_validate_json(schema.model_dump_json())
    assert again == schema
    assert str(again) == str(schema)
    assert schema.format("source") == again.format("source")
    assert FunctionSchema.model_validate(schema.model_dump()) == schema


def test_json_schema_describes_the_model() -> None:
    document = FunctionSchema.model_json_schema()
    assert document["title"] == "FunctionSchema"
    assert {"name", "arguments", "returns", "is_vararg", "is_varret"} <= set(document["properties"])
    json.dumps(document)


def test_default_equality_is_by_value_not_spelling() -> None:
    assert Default(value=1e-05, spelling="1e-05") == Default(
        value=1e-05, spelling="1.0000000000000001e-05"
    )
    assert Default(value=1) != Default(value=1.0)
    assert Default(value=True) != Default(value=1)
    assert Default(value=math.nan) == Default(value=math.nan)
    assert Default(value=(0, 1)).spelling == "[0, 1]"


def test_alias_sets_compare_as_sets_but_print_as_written() -> None:
    ab, ba = AliasInfo(before=("a", "b")), AliasInfo(before=("b", "a"))
    assert ab == ba and hash(ab) == hash(ba)
    assert (str(ab), str(ba)) == ("(a|b)", "(b|a)")
    assert str(AliasInfo(before=("a",), after=("*",))) == "(a -> *)"
    assert str(AliasInfo(before=(), after=(), is_write=True)) == "!"


PROPERTY_SCHEMA = parse_schema(
    "ns::op.out(Tensor self, Tensor? bias, Tensor[] xs, Tensor?[] ys, int n, Device d, *, "
    "Tensor(a!) out, ScalarType? dtype=None) -> Tensor(a!)"
)


@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        ("namespace", "ns"),
        ("overload_name", "out"),
        ("is_mutable", True),
        ("mutated_arguments", ("out",)),
        (
            "tensor_argument_positions",
            ((0, "tensor"), (1, "optional"), (2, "list"), (3, "optional_list"), (6, "tensor")),
        ),
        ("kwarg_only_arguments", tuple(PROPERTY_SCHEMA.arguments[6:])),
        ("positional_arguments", tuple(PROPERTY_SCHEMA.arguments[:6])),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_convenience_properties(prop: str, expected: Any) -> None:
    assert getattr(PROPERTY_SCHEMA, prop) == expected


def test_functional_schema_is_not_mutable() -> None:
    schema = parse_schema("ns::f(Tensor(a) x) -> Tensor(a)")
    assert not schema.is_mutable
    assert schema.arguments[0].alias_info == AliasInfo(before=("a",))
    assert schema.returns[0].alias_info == AliasInfo(before=("a",))


def test_write_inside_a_list_is_a_mutation() -> None:
    assert parse_schema("ns::f(Tensor(a!)[] xs) -> ()").is_mutable
    assert parse_schema("ns::f(Dict(str, t)(a!) d) -> ()").mutated_arguments == ("d",)


def test_format_spec_selects_the_style() -> None:
    schema = parse_schema("aten::f(Tensor x, int reduction=Mean, float eps=1e-05) -> Tensor")
    assert (
        f"{schema}"
        == "aten::f(Tensor x, int reduction=1, float eps=1.0000000000000001e-05) -> Tensor"
    )
    assert f"{schema:source}" == "aten::f(Tensor x, int reduction=Mean, float eps=1e-05) -> Tensor"


def test_type_models_print_like_torch() -> None:
    assert str(DictType(key=BaseType(name="str"), value=VarType(name="t"))) == "Dict(str, t)"
    assert str(ListType(elem=OptionalType(elem=TENSOR))) == "Tensor?[]"
    assert str(OptionalType(elem=ListType(elem=BaseType(name="SymInt"), size=1))) == "SymInt[1]?"
    assert BaseType(name="DeviceIndex").format("canonical") == "int"
    assert BaseType(name="DeviceIndex").format("source") == "DeviceIndex"


def test_built_models_share_a_frozen_field_set_and_copies_get_their_own() -> None:
    import copy

    from customop.schema import parse_schema

    first = parse_schema("m::f(Tensor x) -> Tensor")
    second = parse_schema("m::g(Tensor y) -> Tensor")
    assert first.model_fields_set == set(type(first).model_fields)
    assert first.model_fields_set is second.model_fields_set  # one per class
    assert isinstance(first.model_fields_set, frozenset)
    for copied in (copy.copy(first), copy.deepcopy(first), first.model_copy(deep=True)):
        assert copied == first
        assert type(copied.model_fields_set) is set
    renamed = first.model_copy(update={"name": second.name})
    assert str(renamed) == "m::g(Tensor x) -> Tensor"
    assert str(first) == "m::f(Tensor x) -> Tensor"
    assert first.model_fields_set == set(type(first).model_fields)

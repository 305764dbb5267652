"""Property tests of the schema parser and printers (hypothesis).

1. Any text, schema-ish token soup, or a mutated torch schema either parses or
   raises `SchemaParseError`: never another exception. Where the fast path
   accepts text, the general parser gives the same schema.
2. Generated valid `FunctionSchema` models survive ``parse(str(s))``,
   ``parse(s.format("source"))`` and a JSON round trip.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from customop.exceptions import SchemaParseError
from customop.schema import (
    AliasInfo,
    Argument,
    BaseType,
    ClassType,
    Default,
    DictType,
    FunctionSchema,
    FutureType,
    ListType,
    OperatorName,
    OptionalType,
    Return,
    SchemaType,
    TupleType,
    UnionType,
    VarType,
    parse_operator_name,
    parse_schema,
    parse_schema_or_name,
)
from customop.schema._defaults import ENUM_DEFAULTS, SCALAR_TYPE_CODES
from customop.schema._fastpath import fast_parse
from customop.schema._lexer import Cursor
from customop.schema._parser import _operator_name, _parse_general, _parse_operator_name
from customop.schema._type_parser import type_name_problem
from customop.schema._types import BASE_TYPE_NAMES

TORCH_LINES = (
    (Path(__file__).parent.parent / "data" / "schemas_torch_2_13.txt").read_text().splitlines()
)
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- 1. Nothing but SchemaParseError ------------------------------------------------------------

TOKENS = [
    "aten", "::", "ns", ".", "out", "(", ")", "[", "]", "[2]", ",", ", ", " ", "->", " -> ", "=",
    "*", "...", "?", "!", "|", "(a)", "(a!)", "(a -> *)", "Tensor", "int", "SymInt", "float",
    "bool", "str", "Scalar", "Dict", "Union", "Future", "t", "x", "self", "None", "True", "-1",
    "1.5", "1e-05", "2j", "0.+1.j", "inf", '"mean"', "'a'", '"\\303\\251"', "\\", '"', "#", "\n",
    "é", "__torch__", "default", "__x", "0x10", "long", "Mean", "()",
]  # fmt: skip


def _no_other_errors(text: str) -> None:
    for call in (parse_schema, parse_operator_name, parse_schema_or_name):
        try:
            call(text)
        except SchemaParseError as error:
            assert 0 <= error.column <= len(text)
            assert error.text == text
            assert str(error).startswith(call.__name__ + ": ")


def _fast_path_agrees(text: str) -> None:
    fast = fast_parse(text)
    if fast is not None:
        general = _parse_general(text, True, "parse_schema")
        assert general == fast
        assert str(general) == str(fast)
        assert isinstance(general, FunctionSchema)
        assert general.format("source") == fast.format("source")


def _name_parsers_agree(text: str) -> None:
    # parse_operator_name takes a regex shortcut for plain names; the cursor parser
    # must give the same name, and the shortcut must never accept what it rejects.
    try:
        general = _operator_name_only(text)
    except SchemaParseError:
        general = None
    try:
        quick = _parse_operator_name.__wrapped__(text)
    except SchemaParseError:
        quick = None
    assert quick == general


def _operator_name_only(text: str) -> OperatorName:
    cur = Cursor(text, "parse_operator_name")
    name = _operator_name(cur)
    if not cur.at_end():
        cur.expected("the end of the operator name")
    return name


NAME_PARTS = ["ns", "::", "op", ".", "out", "default", "__x", "_", "1", " ", "é", "a.b", "::x"]


@FAST
@given(st.lists(st.sampled_from(NAME_PARTS), max_size=8).map("".join))
def test_operator_name_shortcut_agrees_with_the_parser(text: str) -> None:
    _name_parsers_agree(text)


@pytest.mark.parametrize(
    "text",
    ["ns::op", "ns::op.out", "ns::op.default", "ns::op.__x", "op", " ns::op", "ns::op.", "é::op"],
    ids=["plain", "overload", "default", "dunder", "bare", "space", "dot", "unicode"],
)
def test_operator_name_shortcut_cases(text: str) -> None:
    _name_parsers_agree(text)


@FAST
@given(st.text())
def test_arbitrary_text_raises_only_schema_parse_error(text: str) -> None:
    _no_other_errors(text)


@FAST
@given(st.lists(st.sampled_from(TOKENS), max_size=24).map("".join))
def test_token_soup_raises_only_schema_parse_error(text: str) -> None:
    _no_other_errors(text)
    _fast_path_agrees(text)


@st.composite
def mutated_lines(draw: st.DrawFn) -> str:
    line = draw(st.sampled_from(TORCH_LINES))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(line)))
        edit = draw(st.sampled_from(["delete", "insert", "replace"]))
        piece = draw(st.sampled_from(TOKENS) | st.characters(codec="utf-8"))
        if edit == "delete":
            line = line[:at] + line[at + 1 :]
        elif edit == "insert":
            line = line[:at] + piece + line[at:]
        else:
            line = line[:at] + piece + line[at + 1 :]
    return line


@FAST
@given(mutated_lines())
def test_mutated_torch_schemas_raise_only_schema_parse_error(text: str) -> None:
    _no_other_errors(text)
    _fast_path_agrees(text)


@pytest.mark.parametrize(
    "type_text",
    [
        "(" * 5000 + ")",
        "Tensor" + "[]" * 5000,
        "(" * 40 + "int" + "[]" * 40 + ")" * 40,  # neither alone is too deep
    ],
    ids=["tuples", "lists", "tuples-of-lists"],
)
def test_deep_nesting_is_a_parse_error(type_text: str) -> None:
    with pytest.raises(SchemaParseError, match="the type nests more than 64 levels deep"):
        parse_schema(f"ns::f({type_text} x) -> ()")


def test_64_levels_still_print_and_serialise() -> None:
    schema = parse_schema("ns::f(" + "(" * 32 + "int" + "?" * 31 + ")" * 32 + " x) -> ()")
    assert parse_schema(str(schema)) == schema
    assert FunctionSchema.model_validate_json(schema.model_dump_json()) == schema


# --- 2. Generated schemas round-trip ------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
IDENT = st.builds(
    str.__add__, st.sampled_from(_LETTERS), st.text(_LETTERS + "0123456789", max_size=6)
)
# Type variables: lower-case names the parser does not take for a mistyped type name.
TYPE_VAR = st.builds(
    str.__add__,
    st.sampled_from("abcdefghijklmnopqrstuvwxyz"),
    st.text(_LETTERS + "0123", max_size=4),
).filter(lambda n: n not in BASE_TYPE_NAMES and type_name_problem(n) is None)
ALIAS_SET = st.sampled_from(["a", "b", "c", "*"]) | IDENT
# DeviceIndex prints as `int` in the canonical spelling (as torch does): tested on its own.
BASE_NAMES = sorted(BASE_TYPE_NAMES - {"DeviceIndex"})
INT_LIKE = {"int", "SymInt", "ScalarType", "Layout", "MemoryFormat", "QScheme"}
ENUM_NAMES = sorted(set(ENUM_DEFAULTS) | set(SCALAR_TYPE_CODES))
# Text with escapes, quotes, control and non-ASCII characters (no lone surrogates).
TEXT = st.text(st.characters(codec="utf-8"), max_size=8) | st.sampled_from(
    ["", "mean", 'a"b', "a'b", "\\", "\n\t\x00\x7f", "é", "ünï", "日本", "🙂"]
)
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
INTS = st.integers(-(2**63), 2**63 - 1)  # schema integers are 64-bit (issue #11 §2)


def _alias_strategy() -> st.SearchStrategy[AliasInfo | None]:
    named = st.builds(
        lambda before, write, after: AliasInfo(
            before=tuple(before), after=tuple(after or before), is_write=write
        ),
        st.lists(ALIAS_SET, min_size=1, max_size=2),
        st.booleans(),
        st.lists(ALIAS_SET, max_size=2),
    )
    bare = st.just(AliasInfo(before=(), after=(), is_write=True))
    return st.none() | named | bare


ALIAS = _alias_strategy()


def _leaf() -> st.SearchStrategy[SchemaType]:
    return (
        st.builds(lambda n, a: BaseType(name=n, alias=a), st.sampled_from(BASE_NAMES), ALIAS)
        | st.builds(lambda n, a: VarType(name=n, alias=a), TYPE_VAR, ALIAS)
        | st.builds(
            lambda parts: ClassType(qualified_name=".".join(["__torch__", *parts])),
            st.lists(IDENT, min_size=1, max_size=3),
        )
    )


def _extend(inner: st.SearchStrategy[SchemaType]) -> st.SearchStrategy[SchemaType]:
    return (
        st.builds(lambda e: OptionalType(elem=e), inner)
        | st.builds(
            lambda e, n, a: ListType(elem=e, size=n, alias=a),
            inner,
            st.none() | st.integers(0, 4),
            ALIAS,
        )
        | st.builds(lambda es: TupleType(elems=tuple(es)), st.lists(inner, max_size=3))
        | st.builds(lambda k, v, a: DictType(key=k, value=v, alias=a), inner, inner, ALIAS)
        | st.builds(
            lambda w, e: FutureType(wrapper=w, elem=e),
            st.sampled_from(["Future", "Await", "RRef"]),
            inner,
        )
        | st.builds(
            lambda es, a: UnionType(elems=tuple(es), alias=a),
            st.lists(inner, min_size=2, max_size=3),
            ALIAS,
        )
    )


_BASE = st.builds(lambda n, a: BaseType(name=n, alias=a), st.sampled_from(BASE_NAMES), ALIAS)
# Mostly the types real schemas have (where defaults live), sometimes anything at all.
SIMPLE_TYPES = (
    _BASE
    | _BASE.map(lambda t: OptionalType(elem=t))
    | st.builds(
        lambda t, n, optional: (
            OptionalType(elem=ListType(elem=t, size=n)) if optional else ListType(elem=t, size=n)
        ),
        _BASE | _BASE.map(lambda t: OptionalType(elem=t)),
        st.none() | st.integers(0, 4),
        st.booleans(),
    )
)
TYPES = SIMPLE_TYPES | st.recursive(_leaf(), _extend, max_leaves=6)


def _scalar_values(tp: SchemaType) -> st.SearchStrategy[Any] | None:
    """Values that fit ``tp`` as a scalar default (None: it has no literal values)."""
    if isinstance(tp, OptionalType):
        inner = _scalar_values(tp.elem)
        # torch turns an int default into a float only for a plain float, not float?
        if isinstance(tp.elem, BaseType) and tp.elem.name in ("float", "SymFloat"):
            inner = FLOATS | INTS
        return st.none() if inner is None else st.none() | inner
    if not isinstance(tp, BaseType):
        return None
    name = tp.name
    if name in INT_LIKE:
        return INTS | st.integers(-(2**62), 2**62)
    if name in ("float", "SymFloat"):
        return FLOATS
    if name in ("bool", "SymBool"):
        return st.booleans()
    if name in ("str", "Device"):
        return TEXT
    if name in ("Scalar", "number", "complex"):
        return INTS | FLOATS | st.complex_numbers() | st.booleans()
    if name in ("Any", "NoneType"):
        return st.none() | INTS | FLOATS | st.booleans() | TEXT
    return None


def _default(tp: SchemaType) -> st.SearchStrategy[Default | None]:
    inner = tp.elem if isinstance(tp, OptionalType) else tp
    values: st.SearchStrategy[Any] | None
    if isinstance(inner, ListType):
        elems = _scalar_values(inner.elem)
        if isinstance(inner.elem, BaseType) and inner.elem.name in ("float", "SymFloat"):
            elems = FLOATS  # list elements of a float list always become floats
        items = st.just(()) if elems is None else st.lists(elems, max_size=4).map(tuple)
        values = st.none() | items if isinstance(tp, OptionalType) else items
        return st.none() | values.map(lambda v: Default(value=v))
    values = _scalar_values(tp)
    if values is None:
        return st.none()
    plain = values.map(lambda v: Default(value=v))
    if isinstance(inner, BaseType) and inner.name in INT_LIKE:
        # Enum-ish spellings: `dtype=long` is 4, `memory_format=contiguous_format` is 0.
        spelled = st.sampled_from(ENUM_NAMES).map(
            lambda n: Default(value=ENUM_DEFAULTS.get(n, SCALAR_TYPE_CODES.get(n)), spelling=n)
        )
        return st.none() | plain | spelled
    if isinstance(inner, BaseType) and inner.name in ("float", "SymFloat"):
        # Source spellings as Python writes floats: 1e-05, 1.0, -0.0, inf.
        spelled = FLOATS.map(lambda f: Default(value=f, spelling=repr(f)))
        return st.none() | plain | spelled
    return st.none() | plain


@st.composite
def arguments(draw: st.DrawFn) -> tuple[Argument, ...]:
    names = draw(st.lists(IDENT, max_size=5, unique=True))
    kwarg_from = draw(st.integers(0, len(names)))
    args = []
    for index, name in enumerate(names):
        tp = draw(TYPES)
        default = draw(_default(tp))
        args.append(Argument(name=name, type=tp, default=default, kwarg_only=index >= kwarg_from))
    return tuple(args)


OVERLOAD = IDENT.filter(lambda n: n != "default" and not n.startswith("__"))
NAMES = st.none() | st.builds(
    OperatorName,
    namespace=st.just("") | IDENT,
    name=IDENT,
    overload=st.just("") | OVERLOAD,
)
RETURNS = st.lists(st.builds(Return, name=st.none() | IDENT, type=TYPES), max_size=3).map(tuple)
SCHEMAS = st.builds(
    FunctionSchema,
    name=NAMES,
    arguments=arguments(),
    returns=RETURNS,
    is_vararg=st.booleans(),
    is_varret=st.booleans(),
)


@FAST
@given(SCHEMAS)
def test_generated_schemas_round_trip(schema: FunctionSchema) -> None:
    canonical = str(schema)
    again = parse_schema(canonical)
    assert again == schema, f"canonical: {canonical}"
    assert str(again) == canonical

    source = schema.format("source")
    again = parse_schema(source)
    assert again == schema, f"source: {source}"
    assert again.format("source") == source

    again = FunctionSchema.model_validate_json(schema.model_dump_json())
    assert again == schema, f"JSON: {schema.model_dump_json()}"
    assert str(again) == canonical

    _fast_path_agrees(canonical)
    _fast_path_agrees(source)


def test_device_index_keeps_its_source_spelling() -> None:
    text = "ns::f(DeviceIndex d, DeviceIndex? e=None) -> DeviceIndex"
    schema = parse_schema(text)
    assert schema.format("source") == text
    assert str(schema) == "ns::f(int d, int? e=None) -> int"
    assert parse_schema(schema.format("source")) == schema

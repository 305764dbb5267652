"""infer_schema against torch 2.13's own answers (tests/data/infer_schema_oracle.jsonl).

Each oracle case is a function written with torch types and what
``torch.library.infer_schema`` said of it. Its source is translated to
customop's types (``torch.Tensor`` -> ``numpy.ndarray`` or ``customop.Tensor``,
``torch.dtype`` -> ``numpy.dtype``, ``torch.device`` -> ``customop.schema.Device``,
``torch.types.Number`` -> ``Union[int, float, bool]``), run, and inferred. When
torch is importable the untranslated source runs too, with torch's own classes.

Every case lands in exactly one bucket:

* torch's text: torch inferred it, and customop prints the same text;
* FIXED: torch inferred text its own parser rejects; customop's parses back;
* REJECTED: customop raises SchemaError naming the parameter (MESSAGES has the text);
* BEYOND_TORCH: torch rejects it; customop infers it (DESIGN §2);
* WITHOUT_TAGS: the case passes torch's `tags=`, which customop's infer_schema does not
  take (tags belong to the op definition); the schema is what customop infers without it.
"""

from __future__ import annotations
import __future__

import collections
import json
import typing
from pathlib import Path

import numpy
import pytest

import customop.tensor
from customop.exceptions import SchemaError
from customop.schema import Device, FunctionSchema, MutatesArgs, infer_schema, parse_schema

DATA = Path(__file__).parent.parent / "data"
ORACLE = [
    json.loads(line) for line in (DATA / "infer_schema_oracle.jsonl").read_text().splitlines()
]
CASES = {case["name"]: case for case in ORACLE}

#: How the oracle's torch spellings read in customop; "{tensor}" is the tensor class under test.
TRANSLATION = [
    ("torch.types.Number", "Union[int, float, bool]"),
    ("torch.dtype", "numpy.dtype"),
    ("torch.float32", "numpy.float32"),
    ("torch.device", "Device"),
    ("torch.zeros", "numpy.zeros"),
    ("torch.SymInt", "SymInt"),
    ("torch.Tensor", "{tensor}"),
]
# customop.Tensor once customop/__init__.py exports it; the class is customop.tensor.Tensor.
# "future" compiles the ndarray translation under `from __future__ import annotations`.
TENSORS = {
    "ndarray": "numpy.ndarray",
    "future": "numpy.ndarray",
    "customop.Tensor": "customop.tensor.Tensor",
    "torch": "",
}


class SymInt:
    """Stands for torch.SymInt, which infer_schema does not know either (torch's neither)."""


SymInt.__module__ = "tests"

#: torch inferred these, but its own parser rejects the text; customop's text parses back.
FIXED = {
    "d_str_with_quote": '(Tensor x, str s="a\\"b") -> Tensor',
}

#: torch rejects these; customop infers them (DESIGN §2).
BEYOND_TORCH = {
    "e_opt_list_tensor": "(Tensor[]? xs) -> Tensor",
    "e_list_str": "(Tensor x, str[] names) -> Tensor",
    "e_nested_list": "(Tensor x, SymInt[][] m) -> Tensor",
    # typing.get_type_hints resolves strings nested in List[...]; torch reads only the top level.
    "s_nested_string": "(Tensor[] xs, Tensor? w=None) -> Tensor",
}

#: Cases whose tags= change torch's answer: the schema customop infers without them.
#: (g_tag_pointwise passes a tag too, but `pointwise` leaves torch's text as it is.)
WITHOUT_TAGS = {
    "g_tag_inplace": "(Tensor(a0!) x, Tensor other) -> Tensor",
    "g_tag_out": "(Tensor x, *, Tensor(a1!) out) -> Tensor",
    "g_tag_out_two": "(Tensor x, *, Tensor(a1!) values, Tensor(a2!) indices) -> (Tensor, Tensor)",
    "e_tag_inplace_wrong_mutates": "(Tensor x, Tensor(a1!) other) -> Tensor",
    "e_tag_out_positional": "(Tensor x, Tensor(a1!) out) -> Tensor",
    "e_tag_inplace_and_out": "(Tensor(a0!) x, *, Tensor out) -> Tensor",
}

#: torch's C++ printer writes these canonically as text its own parser rejects
#: (`Tensor?(a0!)[]`, `Device device=cpu`) or rejects `inf`; customop's canonical text.
CANONICAL = {
    "d_device": '(Tensor x, Device device="cpu") -> Tensor',
    "m_list_opt_tensor": "(Tensor(a0!)?[] xs) -> ()",
    "d_float_inf": "(Tensor x, float s=inf) -> Tensor",
}

#: The exact errors for the numpy.ndarray translation; the error names this subject.
MESSAGES = {
    "d_int_given_bool": (
        "infer_schema: parameter 'n' of function 'd_int_given_bool' has the default True, "
        "which does not fit its schema type SymInt. A schema default must have its "
        "argument's type. Make the default an int (not a bool), or change the annotation."
    ),
    "d_tensor_nonnone_default": (
        "infer_schema: parameter 'y' of function 'd_tensor_nonnone_default' has the "
        "default 1, which does not fit its schema type Tensor. A schema default must have "
        "its argument's type. Make the default None under an Optional annotation (a tensor "
        "cannot be a default), or change the annotation."
    ),
    "d_none_for_non_optional": (
        "infer_schema: parameter 'n' of function 'd_none_for_non_optional' defaults to "
        "None, but its schema type SymInt is not optional. A default must fit its "
        "argument's type, and only an optional type holds None. Annotate it Optional[int], "
        "which gives SymInt?."
    ),
    "d_none_for_non_optional_list": (
        "infer_schema: parameter 'dims' of function 'd_none_for_non_optional_list' "
        "defaults to None, but its schema type SymInt[] is not optional. A default must "
        "fit its argument's type, and only an optional type holds None. Annotate it "
        "Optional[list[int]], which gives SymInt[]?."
    ),
    "s_bare_Tensor_string": (
        "infer_schema: parameter 'x' of function 's_bare_Tensor_string' is annotated "
        "'Tensor', which does not resolve (NameError: name 'Tensor' is not defined). "
        "Annotations are resolved in the globals of the function's module, so names local "
        "to a function are not visible. Import or define the type at module level."
    ),
    "e_dict": (
        "infer_schema: parameter 'd' of function 'e_dict' is annotated <class 'dict'>, "
        "which has no schema type. An operator schema describes tensors, numbers, strings, "
        "dtypes and devices. Use Tensor, int, float, bool, str, Union[int, float, bool], "
        "numpy.dtype, Device, Literal[...] or an Enum, inside Optional[...] or list[...] "
        "as needed, or map the class with customop.schema.register_annotation()."
    ),
    "e_typing_dict": (
        "infer_schema: parameter 'd' of function 'e_typing_dict' is annotated "
        "typing.Dict[str, int], which has no schema type. An operator schema describes "
        "tensors, numbers, strings, dtypes and devices. Use Tensor, int, float, bool, str, "
        "Union[int, float, bool], numpy.dtype, Device, Literal[...] or an Enum, inside "
        "Optional[...] or list[...] as needed, or map the class with "
        "customop.schema.register_annotation()."
    ),
    "e_any": (
        "infer_schema: parameter 'a' of function 'e_any' is annotated typing.Any, which "
        "has no schema type. An operator schema describes tensors, numbers, strings, "
        "dtypes and devices. Use Tensor, int, float, bool, str, Union[int, float, bool], "
        "numpy.dtype, Device, Literal[...] or an Enum, inside Optional[...] or list[...] "
        "as needed, or map the class with customop.schema.register_annotation()."
    ),
    "e_missing_param_annotation": (
        "infer_schema: parameter 'n' of function 'e_missing_param_annotation' has no "
        "annotation (each parameter must have a type annotation). infer_schema reads the schema "
        "from the annotations. Annotate it, as "
        "in n: Tensor."
    ),
    "e_missing_return_annotation": (
        "infer_schema: the return value of function 'e_missing_return_annotation' has no "
        "annotation (torch: No return type annotation was provided. Please add one.). "
        "infer_schema reads the schema's returns from it. Annotate the return, "
        "as in -> Tensor, or -> None when nothing is returned."
    ),
    "e_varargs": (
        "infer_schema: parameter 'args' of function 'e_varargs' is variadic (*args): varargs "
        "are not supported. A schema has a fixed list of named arguments, each of which can be "
        "passed by name. "
        "Take a list instead, as in args: list[Tensor]."
    ),
    "e_varkwargs": (
        "infer_schema: parameter 'kwargs' of function 'e_varkwargs' is variadic "
        "(**kwargs): varkwargs are not supported. A schema has a fixed list of named arguments, "
        "each of which can be "
        "passed by name. Declare each keyword argument after '*' instead."
    ),
    "e_positional_only": (
        "infer_schema: parameter 'x' of function 'e_positional_only' is positional-only "
        "(before '/'). A schema has a fixed list of named arguments, each of which can be "
        "passed by name. Remove the '/' from the signature."
    ),
    "e_tuple_param": (
        "infer_schema: parameter 'size' of function 'e_tuple_param' is annotated "
        "typing.Tuple[int, int], which is a tuple. Schema arguments have no tuple type "
        "(nor have torch's), and only a whole return annotation may be a tuple. Use "
        "list[...] or Sequence[...] for an argument. For example, list[int] instead."
    ),
    "e_tuple_param_ellipsis": (
        "infer_schema: parameter 'size' of function 'e_tuple_param_ellipsis' is annotated "
        "typing.Tuple[int, ...], which is a tuple. Schema arguments have no tuple type "
        "(nor have torch's), and only a whole return annotation may be a tuple. Use "
        "list[...] or Sequence[...] for an argument. For example, list[int] instead."
    ),
    "e_list_opt_int": (
        "infer_schema: parameter 's' of function 'e_list_opt_int' is annotated "
        "typing.List[typing.Optional[int]], which would be the schema type SymInt?[]. As "
        "an argument, SymInt comes only as SymInt, SymInt?, SymInt[], SymInt[]?, "
        "SymInt[][], SymInt[][]?. Annotate it as one of int, Optional[int], list[int], "
        "Optional[list[int]], list[list[int]], Optional[list[list[int]]]."
    ),
    "e_numbers_number": (
        "infer_schema: parameter 'alpha' of function 'e_numbers_number' is annotated "
        "<class 'numbers.Number'>, which has no schema type. An operator schema describes "
        "tensors, numbers, strings, dtypes and devices. Use Tensor, int, float, bool, str, "
        "Union[int, float, bool], numpy.dtype, Device, Literal[...] or an Enum, inside "
        "Optional[...] or list[...] as needed, or map the class with "
        "customop.schema.register_annotation()."
    ),
    "e_union_int_float": (
        "infer_schema: parameter 'alpha' of function 'e_union_int_float' is annotated "
        "typing.Union[int, float], which is a Union with no schema type. The schema unions "
        "are Optional[X] and the number Union[int, float, bool] only. Use one of those, or "
        "separate parameters."
    ),
    "e_symint_annotation": (
        "infer_schema: parameter 'n' of function 'e_symint_annotation' is annotated <class "
        "'tests.SymInt'>, which has no schema type. An operator schema describes tensors, "
        "numbers, strings, dtypes and devices. Use Tensor, int, float, bool, str, "
        "Union[int, float, bool], numpy.dtype, Device, Literal[...] or an Enum, inside "
        "Optional[...] or list[...] as needed, or map the class with "
        "customop.schema.register_annotation()."
    ),
    "e_default_list": (
        "infer_schema: parameter 'shape' of function 'e_default_list' has the default [1, "
        "2], for the list type SymInt[]. infer_schema reads None, bool, int, float, str, "
        "dtype and device defaults only, as torch's does. Default to None under "
        "Optional[...] and build the list in the function."
    ),
    "e_default_tuple": (
        "infer_schema: parameter 'shape' of function 'e_default_tuple' has the default (1, "
        "2), for the list type SymInt[]. infer_schema reads None, bool, int, float, str, "
        "dtype and device defaults only, as torch's does. Default to None under "
        "Optional[...] and build the list in the function."
    ),
    "e_default_tensor_value": (
        "infer_schema: parameter 'y' of function 'e_default_tensor_value' has the default "
        "array([0.]), which does not fit its schema type Tensor. A schema default must "
        "have its argument's type. Make the default None under an Optional annotation (a "
        "tensor cannot be a default), or change the annotation."
    ),
    "e_mutate_int": (
        "infer_schema: parameter 'n' of function 'e_mutate_int' is in mutates_args but has "
        "the schema type SymInt (annotation <class 'int'>). Only tensor arguments can be "
        "mutated in place. Remove 'n' from mutates_args, or return the new value instead."
    ),
    "e_mutate_missing_name": (
        "infer_schema: mutates_args of function 'e_mutate_missing_name' names 'y', which "
        "is not among its parameters ('x'): {'y'} in mutates_args were not found. Only the "
        "function's own arguments can be mutated. Correct or remove the name."
    ),
    "e_mutates_bad_string": (
        "infer_schema: mutates_args of function 'e_mutates_bad_string' is 'all', not a "
        "collection of parameter names. A string would read as one-letter names. Pass the "
        "names, as in ['x'], [] when nothing is mutated, or MutatesArgs.UNKNOWN when you "
        "do not know (torch's 'unknown')."
    ),
    "e_return_str": (
        "infer_schema: the return value of function 'e_return_str' is annotated <class "
        "'str'>, which would be the schema type str. An op returns Tensor, list[Tensor], "
        "int, float, bool or Union[int, float, bool], a tuple of those, or None. Return "
        "one of those; a list of numbers can be returned as a Tensor."
    ),
    "e_return_opt_tensor": (
        "infer_schema: the return value of function 'e_return_opt_tensor' is annotated "
        "typing.Optional[numpy.ndarray], which would be the schema type Tensor?. An op "
        "returns Tensor, list[Tensor], int, float, bool or Union[int, float, bool], a "
        "tuple of those, or None. Return one of those; a list of numbers can be returned "
        "as a Tensor."
    ),
    "e_return_list_int": (
        "infer_schema: the return value of function 'e_return_list_int' is annotated "
        "typing.List[int], which would be the schema type SymInt[]. An op returns Tensor, "
        "list[Tensor], int, float, bool or Union[int, float, bool], a tuple of those, or "
        "None. Return one of those; a list of numbers can be returned as a Tensor."
    ),
    "e_return_tuple_ellipsis": (
        "infer_schema: the return value of function 'e_return_tuple_ellipsis' is annotated "
        "typing.Tuple[numpy.ndarray, ...], which is a tuple of any length, an unsupported return. "
        "A "
        "schema has a "
        "fixed number of returns. Return list[Tensor] for any number of tensors, or name "
        "each element."
    ),
    "e_return_sequence_tensor": (
        "infer_schema: the return value of function 'e_return_sequence_tensor' is "
        "annotated typing.Sequence[numpy.ndarray], which is a Sequence. A kernel returns a "
        "concrete list; Sequence is for arguments. Annotate it list[...]."
    ),
    "e_return_dict": (
        "infer_schema: the return value of function 'e_return_dict' is annotated "
        "typing.Dict[str, numpy.ndarray], which has no schema type. An operator schema "
        "describes tensors, numbers, strings, dtypes and devices. An op returns Tensor, "
        "list[Tensor], int, float, bool or Union[int, float, bool], a tuple of those, or "
        "None; return one of those."
    ),
    "e_string_annotation_undefined": (
        "infer_schema: parameter 'x' of function 'e_string_annotation_undefined' is "
        "annotated 'Foo', which does not resolve (NameError: name 'Foo' is not defined). "
        "Annotations are resolved in the globals of the function's module, so names local "
        "to a function are not visible. Import or define the type at module level."
    ),
}

#: The four results torch's own parser rejects, and what customop does with each.
TORCH_PARSER_REJECTS = {
    "d_float_inf": "same text",
    "d_str_with_quote": "fixed",
    "d_tensor_nonnone_default": "rejected",
    "d_none_for_non_optional_list": "rejected",
}


def _subject(message: str) -> str:
    return message.removeprefix("infer_schema: ").split(" of function ")[0]


def _bucket(name: str) -> str:
    for bucket, table in [
        ("fixed", FIXED),
        ("rejected", MESSAGES),
        ("beyond torch", BEYOND_TORCH),
        ("without tags", WITHOUT_TAGS),
    ]:
        if name in table:
            return bucket
    return "same text"


def _function(case: dict[str, typing.Any], tensor: str) -> typing.Callable[..., object]:
    source = case["source"]
    namespace: dict[str, object] = {name: getattr(typing, name) for name in typing.__all__}
    if tensor == "torch":
        namespace["torch"] = pytest.importorskip("torch")
    else:
        for old, new in TRANSLATION:
            source = source.replace(old, new.format(tensor=TENSORS[tensor]))
        namespace |= {"numpy": numpy, "customop": customop, "Device": Device, "SymInt": SymInt}
    # dont_inherit: this module's own `from __future__ import annotations` must not leak in.
    flags = __future__.annotations.compiler_flag if tensor == "future" else 0
    exec(compile(source, f"<oracle {case['name']}>", "exec", flags, dont_inherit=True), namespace)
    return typing.cast(typing.Callable[..., object], namespace[case["func"]])


def _infer(case: dict[str, typing.Any], tensor: str) -> FunctionSchema:
    mutates = case["mutates_args"]
    return infer_schema(
        _function(case, tensor),
        mutates_args=MutatesArgs.UNKNOWN if mutates == "unknown" else mutates,
        op_name=case["op_name"],
    )


def _canonical(case: dict[str, typing.Any]) -> str:
    """torch's parse-then-print text, without the name the oracle gave it."""
    if case["name"] in CANONICAL:
        return CANONICAL[case["name"]]
    text = str(case["parsed"]).removeprefix("oracle::")
    return text if case["op_name"] else text.removeprefix(case["func"])


@pytest.mark.parametrize("tensor", sorted(TENSORS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_oracle_case(name: str, tensor: str) -> None:
    case = CASES[name]
    bucket = _bucket(name)
    if bucket == "rejected":
        with pytest.raises(SchemaError) as caught:
            _infer(case, tensor)
        message = str(caught.value)
        assert _subject(message) == _subject(MESSAGES[name])
        assert message.startswith(
            f"infer_schema: {_subject(message)} of function {case['func']!r} "
        )
        if tensor == "ndarray":
            assert message == MESSAGES[name]
        return
    schema = _infer(case, tensor)
    text = schema.format("source")
    expected = {"fixed": FIXED, "beyond torch": BEYOND_TORCH, "without tags": WITHOUT_TAGS}
    assert text == expected.get(bucket, {}).get(name, case["result"])
    assert parse_schema(text) == schema
    assert parse_schema(str(schema)) == schema
    if bucket == "same text":
        assert str(schema) == _canonical(case)


def test_every_case_is_in_one_bucket() -> None:
    tables = [FIXED, MESSAGES, BEYOND_TORCH, WITHOUT_TAGS]
    assert sum(len(table) for table in tables) == len(set().union(*tables))
    assert set().union(*tables) <= set(CASES)


def test_bucket_counts() -> None:
    accepted = {name for name, case in CASES.items() if case["result"] is not None}
    counts = collections.Counter((name in accepted, _bucket(name)) for name in CASES)
    assert len(CASES) == 126
    assert counts == {
        (True, "same text"): 83,  # 82 torch parses back, plus `float s=inf`
        (True, "fixed"): 1,
        (True, "rejected"): 4,
        (True, "without tags"): 3,
        (False, "rejected"): 28,
        (False, "beyond torch"): 4,
        (False, "without tags"): 3,
    }


def test_torch_parser_rejects_exactly_four() -> None:
    found = {
        name: _bucket(name)
        for name, case in CASES.items()
        if case["result"] is not None and case["parsed"] is None
    }
    assert found == TORCH_PARSER_REJECTS

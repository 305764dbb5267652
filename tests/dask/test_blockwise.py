"""Partition rules (register_blockwise): parsed, checked against the schema, undone by handle."""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import customop
from customop.dask._blockwise import blockwise_rule, parse_blockwise
from customop.dispatch import Dispatcher
from customop.library import Library, register_blockwise


def _matmul(dispatcher: Dispatcher) -> Any:
    @customop.custom_op("bw::matmul", mutates_args=(), dispatcher=dispatcher)
    def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a @ b

    return matmul


def test_rule_is_registered_with_source_and_removed(dispatcher: Dispatcher) -> None:
    matmul = _matmul(dispatcher)
    handle = matmul.register_blockwise("ij,jk->ik")
    rule = blockwise_rule(matmul.op.handle)
    assert rule is not None
    assert (rule.inputs, rule.output, rule.contracted) == (("ij", "jk"), "ik", ("j",))
    assert handle.source.startswith(f"{Path(__file__).name}:")
    handle.remove()
    handle.remove()  # idempotent
    assert blockwise_rule(matmul.op.handle) is None


def test_whole_dimensions_are_uppercase(dispatcher: Dispatcher) -> None:
    @customop.custom_op("bw::softmax", mutates_args=(), dispatcher=dispatcher)
    def softmax(x: np.ndarray) -> np.ndarray:
        return x

    softmax.register_blockwise("iJ->iJ")
    rule = blockwise_rule(softmax.op.handle)
    assert rule is not None
    assert (rule.inputs, rule.whole, rule.contracted) == (("ij",), frozenset("j"), ())


def test_free_function_for_library_ops(dispatcher: Dispatcher) -> None:
    lib = Library("bwlib", "DEF", dispatcher=dispatcher)
    lib.define("add(Tensor x, Tensor y, float alpha=1.0) -> Tensor")
    handle = register_blockwise("bwlib::add", "ij,ij->ij", dispatcher=dispatcher)
    found = dispatcher.find_op("bwlib::add")
    assert found is not None and blockwise_rule(found) is not None
    handle.remove()
    lib.close()


def test_redefining_a_custom_op_drops_its_rule(dispatcher: Dispatcher) -> None:
    _matmul(dispatcher).register_blockwise("ij,jk->ik")
    again = _matmul(dispatcher)
    assert blockwise_rule(again.op.handle) is None


@pytest.mark.parametrize(
    ("spec", "combine", "message"),
    [
        ("ij,jk", None, "is not 'inputs->output'"),
        ("i1,jk->ik", None, "is not only letters"),
        ("ii,jk->ik", None, "repeats a letter"),
        ("iJ,jk->ik", None, "both lower- and uppercase"),
        ("ij,jk->iz", None, "output index 'z' that no input has"),
        ("ij->ij", None, "has 1 input term(s), but bw::matmul has 2 tensor argument(s) (a, b)"),
        ("ij,jk->ik", 3, "combine=3 is not callable"),
        ("ij,jk->kk", None, "repeats a letter in 'kk'"),
        ("ik,jk->ijk", np.add, "contracts no index"),
    ],
    ids=[
        "no-arrow",
        "digit",
        "diagonal",
        "mixed-case",
        "new-output-index",
        "term-count",
        "combine-not-callable",
        "output-repeats",
        "combine-without-contraction",
    ],
)
def test_bad_rules_are_refused_and_leave_no_trace(
    dispatcher: Dispatcher, spec: str, combine: Any, message: str
) -> None:
    matmul = _matmul(dispatcher)
    with pytest.raises(customop.RegistrationError) as caught:
        matmul.register_blockwise(spec, combine=combine)
    assert str(caught.value).startswith("bw::matmul.register_blockwise: ")
    assert message in str(caught.value)
    assert blockwise_rule(matmul.op.handle) is None


def test_a_second_rule_is_refused_naming_the_first(dispatcher: Dispatcher) -> None:
    matmul = _matmul(dispatcher)
    first = matmul.register_blockwise("ij,jk->ik")
    with pytest.raises(customop.RegistrationError, match="already has the rule 'ij,jk->ik'"):
        matmul.register_blockwise("ij,jk->ik")
    first.remove()
    matmul.register_blockwise("ij,jk->ik").remove()


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ("cat(Tensor[] xs) -> Tensor", "takes the tensor list 'xs'"),
        ("split(Tensor x) -> (Tensor, Tensor)", "returns (Tensor, Tensor), not one Tensor"),
    ],
    ids=["tensor-list", "two-results"],
)
def test_ops_a_rule_cannot_describe(dispatcher: Dispatcher, schema: str, message: str) -> None:
    lib = Library("bwbad", "DEF", dispatcher=dispatcher)
    lib.define(schema)
    name = "bwbad::" + schema.split("(", maxsplit=1)[0]
    with pytest.raises(customop.RegistrationError, match=re.escape(message)):
        register_blockwise(name, "i->i", dispatcher=dispatcher)
    lib.close()


_term = st.text(alphabet=string.ascii_lowercase[:8], min_size=0, max_size=4).map(
    lambda t: "".join(dict.fromkeys(t))
)


@given(st.lists(_term, min_size=1, max_size=3), st.data())
def test_parsed_rules_keep_their_indices(terms: list[str], data: st.DataObject) -> None:
    letters = sorted(set("".join(terms)))
    output = "".join(data.draw(st.permutations(letters))[: data.draw(st.integers(0, len(letters)))])
    whole = data.draw(st.sets(st.sampled_from(letters))) if letters else set()

    def spelled(term: str) -> str:
        return "".join(c.upper() if c in whole else c for c in term)

    rule = parse_blockwise(",".join(map(spelled, terms)) + "->" + spelled(output))
    assert rule.inputs == tuple(terms)
    assert rule.output == output
    assert rule.whole == frozenset(whole)
    assert set(rule.contracted) == set(letters) - set(output)

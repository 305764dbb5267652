"""register_library: one DEF library per namespace; FRAGMENT and IMPL may be many."""

from __future__ import annotations

import pytest

from customop.dispatch import Dispatcher
from customop.exceptions import RegistrationError


def test_second_def_library_names_both_and_says_fragment(dispatcher: Dispatcher) -> None:
    first = dispatcher.register_library("mylib", "DEF")
    with pytest.raises(RegistrationError) as caught:
        dispatcher.register_library("mylib", "DEF", debug="Library('mylib')")
    line = int(first.source.split(":")[1]) + 2
    assert str(caught.value) == (
        f"register_library: namespace 'mylib' already has a DEF library, at {first.source}; a "
        f"second DEF library is at test_library.py:{line} (Library('mylib')). Only one DEF "
        "library may own a namespace, so that all of its definitions live in one place. Use "
        "kind='FRAGMENT' to add definitions to an existing namespace (or 'IMPL' to add "
        "kernels only)."
    )


def test_fragments_and_impls_may_repeat(dispatcher: Dispatcher) -> None:
    dispatcher.register_library("mylib", "DEF")
    handles = [
        dispatcher.register_library("mylib", kind) for kind in ("FRAGMENT", "FRAGMENT", "IMPL")
    ]
    assert [h.description for h in handles] == [
        "library FRAGMENT mylib",
        "library FRAGMENT mylib",
        "library IMPL mylib",
    ]
    for handle in handles:
        handle.remove()
    assert [lib.namespace for lib in dispatcher.snapshot().libraries] == ["mylib"]


def test_removing_the_def_library_frees_the_namespace(dispatcher: Dispatcher) -> None:
    dispatcher.register_library("mylib").remove()
    dispatcher.register_library("mylib")
    assert len(dispatcher.snapshot().libraries) == 1


@pytest.mark.parametrize(
    ("namespace", "kind", "message"),
    [
        pytest.param(
            "my lib",
            "DEF",
            "register_library: namespace 'my lib' is not an identifier. Operator names are "
            "'namespace::name', so the namespace must be one. Use letters, digits and "
            "underscores, like 'mylib'.",
            id="namespace",
        ),
        pytest.param(
            "mylib",
            "DEFINE",
            "register_library: kind 'DEFINE' is not a library kind. A library either owns its "
            "namespace's definitions or adds to them. Use 'DEF', 'FRAGMENT' or 'IMPL'.",
            id="kind",
        ),
    ],
)
def test_bad_arguments(dispatcher: Dispatcher, namespace: str, kind: str, message: str) -> None:
    with pytest.raises(RegistrationError) as caught:
        dispatcher.register_library(namespace, kind)  # type: ignore[arg-type]
    assert str(caught.value) == message

"""`read_signature` reads plain functions from their code and agrees with `inspect.signature`."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from customop.exceptions import SchemaError
from customop.schema._infer_signature import EMPTY, Param, read_signature, resolve_hints


def plain(x: np.ndarray, y: int = 2, *, z: float = 1.0) -> np.ndarray:
    return x


def positional_only(a: int, b: str = "s", /, c: float = 0.5) -> None: ...


def variadic(a, *rest: int, key: bool, other=3, **extra: str):  # type: ignore[no-untyped-def]
    return a


def keyword_only_first(*, k: int, j: str = "x") -> int:
    return k


def no_annotations(a, b=None):  # type: ignore[no-untyped-def]
    return a


def kwargs_only(**options: Any) -> None: ...


def with_locals(x: int) -> int:
    local_a = x + 1
    local_b = local_a * 2
    return local_b


@functools.wraps(plain)
def wrapped(*args: Any, **kwargs: Any) -> Any:
    return plain(*args, **kwargs)


class Kernel:
    def __call__(self, x: np.ndarray, n: int = 1) -> np.ndarray:
        return x


def with_signature(a: int) -> int:
    return a


with_signature.__signature__ = inspect.signature(plain)  # type: ignore[attr-defined]

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "plain": plain,
    "positional_only": positional_only,
    "variadic": variadic,
    "keyword_only_first": keyword_only_first,
    "no_annotations": no_annotations,
    "kwargs_only": kwargs_only,
    "with_locals": with_locals,
    "lambda": lambda x, y=1: x,
    "wrapped": wrapped,
    "callable_object": Kernel(),
    "partial": functools.partial(plain, y=3),
    "bound_method": Kernel().__call__,
    "with_signature": with_signature,
}


@pytest.mark.parametrize("fn", FUNCTIONS.values(), ids=FUNCTIONS.keys())
def test_agrees_with_inspect(fn: Callable[..., Any]) -> None:
    expected = inspect.signature(fn)
    found = read_signature(fn)
    assert found.params == tuple(
        Param(p.name, p.kind, p.default, p.annotation) for p in expected.parameters.values()
    )
    assert found.returns is expected.return_annotation


def test_plain_function_skips_inspect(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("inspect.signature was called")

    monkeypatch.setattr(inspect, "signature", refuse)
    assert read_signature(plain).names == ("x", "y", "z")


def test_plain_classes_are_their_own_hints() -> None:
    sig = read_signature(plain)  # this module's annotations are strings: they resolve
    assert resolve_hints(plain, sig, "plain") == {
        "x": np.ndarray,
        "y": int,
        "z": float,
        "return": np.ndarray,
    }


def test_strings_and_generics_resolve() -> None:
    def fn(x: "np.ndarray", n: list["int"]) -> None: ...  # noqa: UP037 -- strings on purpose

    hints = resolve_hints(fn, read_signature(fn), "fn")
    assert hints == {"x": np.ndarray, "n": list[int], "return": type(None)}


def test_missing_annotation_is_empty() -> None:
    assert read_signature(no_annotations).params[0].annotation is EMPTY


def test_none_reads_as_none_type_without_resolving(monkeypatch: pytest.MonkeyPatch) -> None:
    def fn(x: np.ndarray, out: np.ndarray) -> None: ...

    # As written without `from __future__ import annotations`: objects, not strings.
    fn.__annotations__ = {"x": np.ndarray, "out": np.ndarray, "return": None}

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("typing.get_type_hints was called")

    monkeypatch.setattr("typing.get_type_hints", refuse)
    hints = resolve_hints(fn, read_signature(fn), "fn")
    assert hints == {"x": np.ndarray, "out": np.ndarray, "return": type(None)}


def test_string_annotations_compile_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # This module's annotations are strings (from __future__ import annotations).
    def fn(x: np.ndarray, n: int, out: np.ndarray | None = None) -> np.ndarray: ...

    sig = read_signature(fn)
    first = resolve_hints(fn, sig, "fn")
    monkeypatch.setattr("builtins.compile", None)  # a second resolution must not compile
    assert resolve_hints(fn, sig, "fn") == first
    assert first["x"] is np.ndarray and first["n"] is int
    assert first["out"] == np.ndarray | None


def test_unresolvable_string_names_the_parameter() -> None:
    def fn(x: NotDefinedAnywhere) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(SchemaError, match=r"parameter 'x' .* is annotated 'NotDefinedAnywhere'"):
        resolve_hints(fn, read_signature(fn), "fn")

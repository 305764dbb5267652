"""Inference under an aliasing tag: returns that alias the mutated arguments.

``infer_schema(fn, mutates_args={"x"}, tags="inplace")`` infers
``(Tensor(a0!) x, Tensor y) -> Tensor(a0!)``, and ``tags="out"`` with
keyword-only outputs ``(Tensor x, *, Tensor(a1!) out) -> Tensor(a1!)``, as
torch 2.13's ``infer_schema(..., tags=torch.Tag.inplace / torch.Tag.out)``.
The function must fit the tag; each rule is checked in torch's order, and the
message carries torch's sentence for it (``torch.Tag.inplace requires the
first positional argument to be a Tensor.``) inside customop's four parts.
"""

from __future__ import annotations

import inspect
from typing import Final, NoReturn

from customop.exceptions import SchemaError
from customop.schema._base import build
from customop.schema._infer_signature import Param
from customop.schema._model import Argument, Return
from customop.schema._mutates import MutatesArgs
from customop.schema._tags import INPLACE, AliasingTag, plain_tensor
from customop.schema._types import AliasInfo, BaseType

__all__ = ["tagged_returns"]

_POSITIONAL: Final = inspect.Parameter.POSITIONAL_OR_KEYWORD
_WHY: Final = {
    INPLACE: "An in-place op mutates its first positional Tensor argument and returns it, "
    "so its schema returns Tensor(a!) aliasing that argument",
    "out": "An out= op writes keyword-only Tensor arguments and returns them, in order, so "
    "its schema returns Tensor(a!) aliasing each of them",
}


def _fail(function: str, tag: AliasingTag, rule: str, fix: str) -> NoReturn:
    raise SchemaError(
        f"infer_schema: function {function!r} is tagged {tag}, but {rule} "
        f"({rule_text(tag, rule).rstrip('.')}). {_WHY[tag]}. {fix}."
    )


def rule_text(tag: AliasingTag, rule: str) -> str:
    """torch's sentence for the rule, for code that matches torch's messages."""
    return _TORCH_RULES[tag, rule]


_TORCH_RULES: Final = {
    (INPLACE, "it has no positional argument"): "torch.Tag.inplace requires a positional "
    "Tensor argument.",
    (INPLACE, "its first positional argument is not a Tensor"): "torch.Tag.inplace requires "
    "the first positional argument to be a Tensor.",
    (INPLACE, "mutates_args is not exactly its first positional argument"): "torch.Tag.inplace "
    "requires mutates_args to contain exactly the first positional argument.",
    (INPLACE, "its return is not annotated Tensor"): "torch.Tag.inplace requires the return "
    "annotation to be torch.Tensor.",
    ("out", "a mutated argument is positional"): "torch.Tag.out requires mutable arguments to "
    "be keyword-only.",
    ("out", "a mutated argument is not a single Tensor"): "torch.Tag.out only supports mutable "
    "keyword-only Tensor arguments.",
    ("out", "it mutates no keyword-only Tensor argument"): "torch.Tag.out requires at least one "
    "mutable keyword-only Tensor argument.",
    ("out", "its return does not match the mutated arguments"): "torch.Tag.out requires the "
    "return annotation to match the mutable keyword-only Tensor arguments.",
}


def _alias_of(name: str) -> BaseType:
    return BaseType(name="Tensor", alias=AliasInfo(before=(name,), after=(name,), is_write=True))


def _is_plain_return(ret: Return) -> bool:
    return type(ret.type) is BaseType and ret.type.name == "Tensor"


def tagged_returns(
    function: str,
    tag: AliasingTag,
    params: tuple[Param, ...],
    arguments: tuple[Argument, ...],
    returns: tuple[Return, ...],
    *,
    mutates: frozenset[str] | MutatesArgs,
) -> tuple[Return, ...]:
    """The returns of a function tagged ``tag``, aliased to the arguments it mutates.

    Raises:
        SchemaError: the function breaks one of the tag's rules.
    """
    if tag == INPLACE:
        return _inplace(function, params, arguments, returns, mutates)
    return _out(function, params, arguments, returns)


def _inplace(
    function: str,
    params: tuple[Param, ...],
    arguments: tuple[Argument, ...],
    returns: tuple[Return, ...],
    mutates: frozenset[str] | MutatesArgs,
) -> tuple[Return, ...]:
    index = next((i for i, param in enumerate(params) if param.kind is _POSITIONAL), None)
    fix = "Write it as def f(x: Tensor, ...) -> Tensor with mutates_args={'x'}, returning x"
    if index is None:
        _fail(function, INPLACE, "it has no positional argument", fix)
    first = arguments[index]
    if not plain_tensor(first):
        _fail(function, INPLACE, "its first positional argument is not a Tensor", fix)
    if not isinstance(mutates, frozenset) or mutates != {first.name}:
        _fail(function, INPLACE, "mutates_args is not exactly its first positional argument", fix)
    if len(returns) != 1 or not _is_plain_return(returns[0]):
        _fail(function, INPLACE, "its return is not annotated Tensor", fix)
    alias = first.alias_info
    assert alias is not None  # a mutated Tensor argument always gets its write set
    return (build(Return, {"name": None, "type": _alias_of(alias.before[0])}),)


def _out(
    function: str,
    params: tuple[Param, ...],
    arguments: tuple[Argument, ...],
    returns: tuple[Return, ...],
) -> tuple[Return, ...]:
    fix = "Write it as def f(x: Tensor, *, out: Tensor) -> Tensor with mutates_args={'out'}"
    outs: list[Argument] = []
    for param, argument in zip(params, arguments, strict=True):
        if not argument.is_write:
            continue
        if param.kind is not inspect.Parameter.KEYWORD_ONLY:
            _fail(function, "out", "a mutated argument is positional", fix)
        if not plain_tensor(argument):
            _fail(function, "out", "a mutated argument is not a single Tensor", fix)
        outs.append(argument)
    if not outs:
        _fail(function, "out", "it mutates no keyword-only Tensor argument", fix)
    if len(returns) != len(outs) or not all(map(_is_plain_return, returns)):
        _fail(function, "out", "its return does not match the mutated arguments", fix)
    return tuple(
        build(Return, {"name": None, "type": _alias_of(out.alias_info.before[0])})  # type: ignore[union-attr]
        for out in outs
    )

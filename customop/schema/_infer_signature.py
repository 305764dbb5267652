"""Reading a function's parameters and resolving its annotations, for `infer_schema`.

``inspect.signature`` costs about 12 µs for a three-parameter function, a
tenth of a whole ``@custom_op`` registration budget; for a plain function the
same facts are read straight from its code object in about 2 µs. Anything
else (partials, callable objects, wrapped functions, ``__signature__``) goes
through `inspect`, which knows their rules.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import typing
from collections.abc import Callable
from typing import Final, NamedTuple

from customop.exceptions import SchemaError
from customop.schema._infer_walk import Site

__all__ = [
    "EMPTY",
    "Param",
    "Signature",
    "check_mutated_exist",
    "read_signature",
    "resolve_hints",
]

#: No default, or no annotation (inspect's marker, so both paths agree).
EMPTY: Final = inspect.Parameter.empty

_NONE_TYPE: Final = type(None)
_Kind = inspect._ParameterKind
_POSITIONAL_ONLY: Final = inspect.Parameter.POSITIONAL_ONLY
_POSITIONAL: Final = inspect.Parameter.POSITIONAL_OR_KEYWORD
_VAR_POSITIONAL: Final = inspect.Parameter.VAR_POSITIONAL
_KEYWORD_ONLY: Final = inspect.Parameter.KEYWORD_ONLY
_VAR_KEYWORD: Final = inspect.Parameter.VAR_KEYWORD


class Param(NamedTuple):
    """One parameter, as `inspect.Parameter` describes it."""

    name: str
    kind: _Kind
    default: object  # EMPTY when there is none
    annotation: object  # EMPTY when there is none


class Signature(NamedTuple):
    """The parameters in signature order, and the return annotation (or EMPTY)."""

    params: tuple[Param, ...]
    returns: object

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(param.name for param in self.params)


def read_signature(fn: Callable[..., object]) -> Signature:
    """``fn``'s parameters, exactly as ``inspect.signature(fn)`` reports them."""
    if type(fn) is types.FunctionType:
        own = fn.__dict__
        if "__wrapped__" not in own and "__signature__" not in own:
            return _from_code(fn)
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as error:
        raise SchemaError(
            f"infer_schema: the signature of {fn!r} cannot be read ({error}). infer_schema "
            "reads the parameters and their annotations. Pass a Python function with type hints."
        ) from None
    params = tuple(Param(p.name, p.kind, p.default, p.annotation) for p in sig.parameters.values())
    return Signature(params, sig.return_annotation)


_new: Final = tuple.__new__


def _from_code(fn: types.FunctionType) -> Signature:
    # co_varnames lists positional parameters, keyword-only ones, then the names
    # of *args and **kwargs; inspect orders *args before the keyword-only ones.
    code = fn.__code__
    names = code.co_varnames
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    annotations = fn.__annotations__
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    first_default = npos - len(defaults)

    def param(name: str, kind: _Kind, default: object = EMPTY) -> Param:
        # tuple.__new__: the NamedTuple's own __new__ is a Python function.
        return _new(Param, (name, kind, default, annotations.get(name, EMPTY)))

    params = []
    for i in range(npos):
        kind = _POSITIONAL_ONLY if i < code.co_posonlyargcount else _POSITIONAL
        params.append(
            param(names[i], kind, defaults[i - first_default] if i >= first_default else EMPTY)
        )
    extra = npos + nkw
    if code.co_flags & inspect.CO_VARARGS:
        params.append(param(names[extra], _VAR_POSITIONAL))
        extra += 1
    params += [
        param(name, _KEYWORD_ONLY, kwdefaults.get(name, EMPTY)) for name in names[npos : npos + nkw]
    ]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        params.append(param(names[extra], _VAR_KEYWORD))
    return _new(Signature, (tuple(params), annotations.get("return", EMPTY)))


def _needs_resolving(annotation: object) -> bool:
    # A plain class is its own hint (None stands for NoneType); strings, forward
    # refs and typing forms (which may hold strings inside) need get_type_hints.
    if annotation is None:
        return False
    return not isinstance(annotation, type) or isinstance(annotation, types.GenericAlias)


def resolve_hints(fn: Callable[..., object], sig: Signature, function: str) -> dict[str, object]:
    """Each annotated parameter's (and ``"return"``'s) resolved annotation."""
    raw = {p.name: p.annotation for p in sig.params if p.annotation is not EMPTY}
    if sig.returns is not EMPTY:
        raw["return"] = sig.returns
    if not any(_needs_resolving(annotation) for annotation in raw.values()):
        return {name: _NONE_TYPE if hint is None else hint for name, hint in raw.items()}
    namespace = _namespace(fn)
    try:
        if namespace is not None:
            return {name: _resolve_one(hint, namespace) for name, hint in raw.items()}
        # A namespace object carries exactly the signature's annotations, so callable
        # objects and partials resolve like functions.
        hints = types.SimpleNamespace(__annotations__=raw)
        # include_extras: Annotated[T, ...] is unwrapped by the walk, and stripping costs.
        resolved = typing.get_type_hints(hints, namespace, include_extras=True)
        return {name: _strings_in_builtin_generics(h, None) for name, h in resolved.items()}
    except Exception as error:  # evaluating a user's annotations may raise anything
        _blame(raw, namespace, function)
        raise SchemaError(
            f"infer_schema: the annotations of function {function!r} do not resolve "
            f"({type(error).__name__}: {error}). The schema is read from them. Make every "
            "annotation importable from the function's module."
        ) from error


def _resolve_one(annotation: object, namespace: dict[str, object]) -> object:
    """One annotation, resolved as typing.get_type_hints resolves it, but faster.

    get_type_hints compiles every string annotation again on each call (about
    9 µs each, and ``from __future__ import annotations`` makes every
    annotation a string). Here a string is compiled once and evaluated in the
    function's globals, as get_type_hints evaluates it; what that gives is
    returned as is when it is a plain class, else resolved by get_type_hints
    (a typing form may hold strings of its own).
    """
    if isinstance(annotation, str):
        annotation = eval(_compiled(annotation), namespace)  # as get_type_hints does
    if annotation is None:
        return _NONE_TYPE
    if not _needs_resolving(annotation):
        return annotation
    hints = types.SimpleNamespace(__annotations__={"hint": annotation})
    return _strings_in_builtin_generics(
        typing.get_type_hints(hints, namespace, include_extras=True)["hint"], namespace
    )


def _strings_in_builtin_generics(hint: object, namespace: dict[str, object] | None) -> object:
    """``list["int"]`` -> ``list[int]``: get_type_hints does this itself from Python 3.11;
    3.10's leaves strings inside builtin generics (``types.GenericAlias``) unresolved."""
    if sys.version_info >= (3, 11) or not isinstance(hint, types.GenericAlias):
        return hint
    args = tuple(
        _strings_in_builtin_generics(
            eval(_compiled(arg), namespace) if isinstance(arg, str) else arg,  # as above
            namespace,
        )
        for arg in hint.__args__
    )
    return types.GenericAlias(hint.__origin__, args)


@functools.lru_cache(maxsize=1024)
def _compiled(text: str) -> types.CodeType:
    return compile(text, "<annotation>", "eval")


def _namespace(fn: Callable[..., object]) -> dict[str, object] | None:
    """The globals string annotations are resolved in: those of the function defined."""
    target: object = inspect.unwrap(fn)
    while isinstance(target, functools.partial):
        target = inspect.unwrap(target.func)
    found = getattr(target, "__globals__", None)
    return found if isinstance(found, dict) else None


def _blame(raw: dict[str, object], namespace: dict[str, object] | None, function: str) -> None:
    """Raise the error for the first annotation that does not resolve, if one alone fails."""
    for name, annotation in raw.items():
        try:
            typing.get_type_hints(
                types.SimpleNamespace(__annotations__={name: annotation}), namespace
            )
        except Exception as error:  # evaluating a user's annotation may raise anything
            subject = "the return value" if name == "return" else f"parameter {name!r}"
            Site(function, subject, annotation).fail(
                f"is annotated {annotation!r}, which does not resolve "
                f"({type(error).__name__}: {error})",
                "Annotations are resolved in the globals of the function's module, so names "
                "local to a function are not visible",
                "Import or define the type at module level",
            )


def check_mutated_exist(mutates: frozenset[str], sig: Signature, function: str) -> None:
    """Raise unless every name in ``mutates`` is a parameter of ``sig``."""
    missing = sorted(mutates - set(sig.names))
    if missing:
        plural = "s" if len(missing) > 1 else ""
        params = ", ".join(map(repr, sig.names)) or "it has none"
        listed = ", ".join(map(repr, missing))
        found = "{" + listed + "}"  # torch's phrase: "{'y'} in mutates_args were not found"
        raise SchemaError(
            f"infer_schema: mutates_args of function {function!r} names {listed}, which "
            f"{'are' if plural else 'is'} not among its parameters ({params}): {found} in "
            "mutates_args were not found. Only the function's own arguments can be mutated. "
            f"Correct or remove the name{plural}."
        )

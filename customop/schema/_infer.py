"""``infer_schema``: a `FunctionSchema` from a function's type hints.

Hints are resolved as ``typing.get_type_hints`` resolves them (string annotations
in the function's globals; see `customop.schema._infer_signature`), so
``from __future__ import annotations`` works. Each annotation
is read by `customop.schema._infer_walk` against the tables of
`customop.schema._infer_table`; this module adds what a whole signature needs:
parameter kinds, defaults, ``mutates_args``, returns, and the operator name.
The schema is built as a model directly, never as text to parse again.
"""

from __future__ import annotations

import collections.abc
import inspect
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, final

from customop.exceptions import RegistrationError, SchemaError
from customop.schema._base import build
from customop.schema._clip import clip_repr
from customop.schema._defaults import INT64_MAX, INT64_MIN, Default, encodable
from customop.schema._infer_signature import (
    EMPTY,
    Param,
    check_mutated_exist,
    read_signature,
    resolve_hints,
)
from customop.schema._infer_table import RULES, Choices, add_annotation
from customop.schema._infer_tags import tagged_returns
from customop.schema._infer_walk import (
    FORMS,
    Shape,
    Site,
    form_key,
    require,
    schema_type,
    spell,
    walk,
)
from customop.schema._model import Argument, FunctionSchema, OperatorName, Return
from customop.schema._mutates import MutatesArgs
from customop.schema._parser import parse_operator_name
from customop.schema._tags import aliasing_tag
from customop.schema._types import TupleType, is_identifier

__all__ = [
    "InferredSchema",
    "MutatesArgs",
    "infer_schema",
    "infer_schema_details",
    "register_annotation",
]


@final
@dataclass(frozen=True, slots=True)
class InferredSchema:
    """What `infer_schema_details` found: the schema, and what a schema cannot say.

    ``choices`` maps each parameter annotated with ``Literal[...]`` or an
    ``Enum`` (inferred as ``str``, ``str?`` or ``str[]``) to the strings it
    accepts, so that calls can be checked and enum members handed back.
    """

    schema: FunctionSchema
    choices: Mapping[str, Choices]


_RETURNABLE = (
    "An op returns Tensor, list[Tensor], int, float, bool or Union[int, float, bool], "
    "a tuple of those, or None"
)
#: tuple and typing.Tuple without arguments: a tuple of unknown elements.
_BARE_TUPLES: Final = (tuple, typing.Tuple)  # noqa: UP006 -- the deprecated alias is matched, not used
_NONE: Final = build(Default, {"value": None, "spelling": "None"})

#: Parameter kinds a schema cannot express: what they are and how to fix them.
_KINDS: Final[Mapping[object, tuple[str, str]]] = types.MappingProxyType(
    {
        inspect.Parameter.POSITIONAL_ONLY: (
            "is positional-only (before '/')",
            "Remove the '/' from the signature",
        ),
        inspect.Parameter.VAR_POSITIONAL: (
            "is variadic (*{0}): varargs are not supported",
            "Take a list instead, as in {0}: list[Tensor]",
        ),
        inspect.Parameter.VAR_KEYWORD: (
            "is variadic (**{0}): varkwargs are not supported",
            "Declare each keyword argument after '*' instead",
        ),
    }
)


def _default(value: object, shape: Shape, site: Site) -> Default | None:
    if value is EMPTY:
        return None
    if value is None:
        if shape.form.endswith("?"):
            return _NONE
        site.fail(
            f"defaults to None, but its schema type {shape.text} is not optional",
            "A default must fit its argument's type, and only an optional type holds None",
            f"Annotate it {spell(RULES[shape.base].python, shape.form + '?')}, which gives "
            f"{shape.text}?",
        )
    if "[]" in shape.form:
        site.fail(
            f"has the default {clip_repr(value)}, for the list type {shape.text}",
            "infer_schema reads None, bool, int, float, str, dtype and device defaults only, "
            "as torch's does",
            "Default to None under Optional[...] and build the list in the function",
        )
    if type(value) is int and not INT64_MIN <= value <= INT64_MAX:
        site.fail(
            f"has the default {clip_repr(value, 40)}, beyond the 64-bit range",
            "Schema integers are 64-bit, as torch's, so the schema could not be parsed back",
            "Use a value from -2**63 to 2**63 - 1, or a float",
        )
    if isinstance(value, str) and not encodable(value):
        site.fail(
            f"has the default {clip_repr(value)}, which holds a lone surrogate",
            "Schema text is UTF-8, which cannot hold one, so the schema could not be printed",
            "Write the whole character (a surrogate pair is one character in Python: "
            "'\\U0001f600', not '\\ud83d\\ude00')",
        )
    if shape.base in ("float", "SymFloat") and shape.form == "?" and type(value) is int:
        # torch's parser reads `float? x=0` as the int 0 (only a plain float converts):
        # keep the int, so that the schema and its source text parse back equal.
        return build(Default, {"value": value, "spelling": str(value)})
    rule = RULES[shape.base]
    default = rule.default(value, shape.leaf, shape.choices)
    if default is None:
        expects = rule.expects
        if shape.choices is not None:
            expects = "one of " + ", ".join(map(repr, shape.choices.values))
        site.fail(
            f"has the default {clip_repr(value)}, which does not fit its schema type {shape.text}",
            "A schema default must have its argument's type",
            f"Make the default {expects}, or change the annotation",
        )
    return default


def _check_parameter(param: Param, site: Site) -> None:
    if param.kind in _KINDS:
        what, fix = _KINDS[param.kind]
        site.fail(
            what.format(param.name),
            "A schema has a fixed list of named arguments, each of which can be passed by name",
            fix.format(param.name),
        )
    if not is_identifier(param.name):
        site.fail(
            "is not an ASCII identifier",
            "Schema argument names are ASCII identifiers",
            "Rename it",
        )
    if param.annotation is EMPTY:
        site.fail(
            "has no annotation (each parameter must have a type annotation)",
            "infer_schema reads the schema from the annotations",
            f"Annotate it, as in {param.name}: Tensor",
        )


# Inferred arguments and returns, by everything that decides them. Registering
# many ops repeats the same parameters (x: Tensor, alpha: float = 1.0) over and
# over, and an Argument is immutable, so schemas can share them. Annotations
# are keyed by identity (the memo keeps them alive, so ids stay unique):
# equality would confuse Literal['a', 'b'] with Literal['b', 'a'].
_ARGUMENTS: dict[tuple[object, ...], tuple[object, Argument, Choices | None]] = {}
_RETURNS: dict[int, tuple[object, tuple[Return, ...]]] = {}
# Argument tuples by the identities of their (shared) Arguments, which the
# tuple keeps alive: ops with the same parameters share one tuple too (one
# object less per op for gc to visit when many are registered, issue #12).
_ARGUMENT_LISTS: dict[tuple[int, ...], tuple[Argument, ...]] = {}
_MEMO_LIMIT: Final = 4096


def _forget() -> None:
    """Drop memoized inferences (the annotation table changed)."""
    _ARGUMENTS.clear()
    _RETURNS.clear()
    _ARGUMENT_LISTS.clear()


def _remember(memo: dict[Any, Any], key: object, value: object) -> None:
    if len(memo) >= _MEMO_LIMIT:  # bounded: new functions keep making new annotations
        memo.clear()
    memo[key] = value


def _argument(
    index: int,
    param: Param,
    annotation: object,
    function: str,
    mutates: frozenset[str] | MutatesArgs,
) -> tuple[Argument, Choices | None]:
    listed = isinstance(mutates, frozenset) and param.name in mutates
    numbered = listed or mutates is MutatesArgs.UNKNOWN  # may get the alias a<index>
    default = param.default
    # repr tells 0.0 from -0.0 and 1 from True, which equality does not.
    key: tuple[object, ...] = (
        param.name,
        param.kind,
        id(annotation),
        type(default),
        default if default is EMPTY else clip_repr(default),  # bounded: no 5,000-digit repr
        listed,
    )
    key += (index,) if numbered else ()
    found = _ARGUMENTS.get(key)
    if found is not None:
        return found[1], found[2]
    site = Site(function, f"parameter {param.name!r}", annotation)
    argument, choice = _infer_argument(index, param, site, mutates)
    _remember(_ARGUMENTS, key, (annotation, argument, choice))
    return argument, choice


def _infer_argument(
    index: int, param: Param, site: Site, mutates: frozenset[str] | MutatesArgs
) -> tuple[Argument, Choices | None]:
    _check_parameter(param, site)
    shape = walk(site.annotation, site)
    require(shape, RULES[shape.base].params, site)
    listed = isinstance(mutates, frozenset) and param.name in mutates
    if listed and shape.base != "Tensor":
        site.fail(
            f"is in mutates_args but has the schema type {shape.text} "
            f"(annotation {site.annotation!r})",
            "Only tensor arguments can be mutated in place",
            f"Remove {param.name!r} from mutates_args, or return the new value instead",
        )
    written = shape.base == "Tensor" and (listed or mutates is MutatesArgs.UNKNOWN)
    values = {
        "name": param.name,
        "type": schema_type(shape.base, shape.form, f"a{index}" if written else None),
        "default": _default(param.default, shape, site),
        "kwarg_only": param.kind is inspect.Parameter.KEYWORD_ONLY,
    }
    return build(Argument, values), shape.choices


def _return(annotation: object, site: Site) -> Return:
    if typing.get_origin(annotation) is collections.abc.Sequence:
        site.fail(
            f"{site.annotated(annotation)} is a Sequence",
            "A kernel returns a concrete list; Sequence is for arguments",
            "Annotate it list[...]",
        )
    shape = walk(annotation, site)
    fix = "Return one of those; a list of numbers can be returned as a Tensor"
    require(shape, RULES[shape.base].returns, site, _RETURNABLE, fix)
    return build(Return, {"name": None, "type": schema_type(shape.base, shape.form)})


def _returns(site: Site) -> tuple[Return, ...]:
    annotation = site.annotation
    if annotation is EMPTY:
        site.fail(
            "has no annotation (torch: No return type annotation was provided. Please add one.)",
            "infer_schema reads the schema's returns from it",
            "Annotate the return, as in -> Tensor, or -> None when nothing is returned",
        )
    if annotation is None or annotation is type(None):
        return ()
    if annotation in _BARE_TUPLES:
        site.fail(
            f"{site.annotated(annotation)} is a tuple without element types",
            _RETURNABLE,
            "Name the element types, as in tuple[Tensor, Tensor]",
        )
    if typing.get_origin(annotation) is not tuple:
        return (_return(annotation, site),)
    items = typing.get_args(annotation)
    if items == ((),):  # Python 3.10 spells typing.Tuple[()]'s arguments so
        items = ()
    if Ellipsis in items:
        site.fail(
            f"{site.annotated(annotation)} is a tuple of any length, an unsupported return",
            "A schema has a fixed number of returns",
            "Return list[Tensor] for any number of tensors, or name each element",
        )
    returns = tuple(_return(item, site) for item in items)
    if len(returns) == 1:
        # torch infers tuple[Tensor] as `-> ((Tensor))`: one return of a one-element tuple type.
        return (build(Return, {"name": None, "type": TupleType(elems=(returns[0].type,))}),)
    return returns


def _shared_arguments(arguments: list[Argument]) -> tuple[Argument, ...]:
    key = tuple(map(id, arguments))
    found = _ARGUMENT_LISTS.get(key)
    if found is None:
        found = tuple(arguments)
        _remember(_ARGUMENT_LISTS, key, found)
    return found


def _memo_returns(annotation: object, function: str) -> tuple[Return, ...]:
    found = _RETURNS.get(id(annotation))
    if found is not None:
        return found[1]
    returns = _returns(
        Site(function, "the return value", annotation, f"{_RETURNABLE}; return one of those")
    )
    _remember(_RETURNS, id(annotation), (annotation, returns))
    return returns


def _mutates(mutates_args: object, function: str) -> frozenset[str] | MutatesArgs:
    if isinstance(mutates_args, MutatesArgs):
        return mutates_args
    names = None if isinstance(mutates_args, str) else mutates_args
    # Concrete collections first: an isinstance against the Iterable ABC is slow.
    if not isinstance(names, tuple | list | set | frozenset | Iterable):
        raise SchemaError(
            f"infer_schema: mutates_args of function {function!r} is {mutates_args!r}, not a "
            "collection of parameter names. A string would read as one-letter names. Pass the "
            "names, as in ['x'], [] when nothing is mutated, or MutatesArgs.UNKNOWN when you "
            "do not know (torch's 'unknown')."
        )
    found = tuple(names)
    strings = [name for name in found if isinstance(name, str)]
    if len(strings) < len(found):
        name = next(name for name in found if not isinstance(name, str))
        raise SchemaError(
            f"infer_schema: mutates_args of function {function!r} contains {name!r}, which "
            "is not a str. mutates_args holds parameter names. Pass names, as in ['x']."
        )
    return frozenset(strings)


def _operator_name(op_name: str | None) -> OperatorName | None:
    if op_name is None:
        return None
    try:
        return parse_operator_name(op_name)
    except SchemaError as error:
        raise SchemaError(
            f"infer_schema: op_name {op_name!r} is not an operator name ({error}). The schema "
            "is named by it. Write it as 'ns::name' or 'ns::name.overload'."
        ) from None


def infer_schema_details(
    fn: Callable[..., object],
    *,
    mutates_args: Iterable[str] | MutatesArgs,
    op_name: str | None = None,
    tags: Iterable[object] = (),
) -> InferredSchema:
    """`infer_schema`, plus the allowed values of ``Literal`` and ``Enum`` parameters.

    Args:
        fn: the typed function.
        mutates_args: the parameters ``fn`` writes to, or `MutatesArgs.UNKNOWN`.
        op_name: the operator's name, or None for an anonymous schema.
        tags: the op's tags (str or ``torch.Tag``); ``inplace`` and ``out`` alias
            the returns to the mutated arguments.

    Returns:
        The schema and the allowed values per parameter.

    Raises:
        SchemaError: a parameter's annotation has no schema type, or the
            function does not fit its ``inplace`` / ``out`` tag.
    """
    function = str(getattr(fn, "__qualname__", None) or repr(fn))
    tag = aliasing_tag(tags, "infer_schema")
    mutates = _mutates(mutates_args, function)
    name = _operator_name(op_name)
    sig = read_signature(fn)
    if isinstance(mutates, frozenset) and mutates:
        check_mutated_exist(mutates, sig, function)
    hints = resolve_hints(fn, sig, function)
    arguments: list[Argument] = []
    choices: dict[str, Choices] = {}
    for index, param in enumerate(sig.params):
        annotation = hints.get(param.name, param.annotation)
        argument, choice = _argument(index, param, annotation, function, mutates)
        arguments.append(argument)
        if choice is not None:
            choices[param.name] = choice
    returns = _memo_returns(hints.get("return", sig.returns), function)
    if tag is not None:
        returns = tagged_returns(
            function, tag, sig.params, tuple(arguments), returns, mutates=mutates
        )
    values = {
        "name": name,
        "arguments": _shared_arguments(arguments),
        "returns": returns,
        "is_vararg": False,
        "is_varret": False,
    }
    return InferredSchema(build(FunctionSchema, values), types.MappingProxyType(choices))


def infer_schema(
    fn: Callable[..., object],
    *,
    mutates_args: Iterable[str] | MutatesArgs,
    op_name: str | None = None,
    tags: object = (),
) -> FunctionSchema:
    """The schema of ``fn``, read from its type hints, as ``torch.library.infer_schema`` does.

    ``mutates_args`` names the parameters ``fn`` mutates in place (each must be
    a tensor argument), or is `MutatesArgs.UNKNOWN`. ``op_name`` (``"ns::name"``
    or ``"ns::name.overload"``) names the schema; without it the schema is
    anonymous. Where torch can infer a function, the schema prints (in the
    ``source`` style) as torch's text; customop also infers ``Tensor[]?``,
    ``str[]``, ``list[list[int]]`` and ``Literal``/``Enum`` (as ``str``). Raises
    `SchemaError` (a ``ValueError``) naming the parameter and the fix otherwise.
    ``tags`` (a tag or several, str or ``torch.Tag``) with ``inplace`` or ``out``
    aliases the returns to the mutated arguments, as torch's ``tags=`` does.

    >>> import numpy
    >>> def scale(x: numpy.ndarray, alpha: float = 1.0) -> numpy.ndarray: ...
    >>> print(infer_schema(scale, mutates_args=(), op_name="mylib::scale"))
    mylib::scale(Tensor x, float alpha=1.) -> Tensor

    Args:
        fn: the typed function.
        mutates_args: the parameters ``fn`` writes to, or `MutatesArgs.UNKNOWN`.
        op_name: the operator's name, or None for an anonymous schema.
        tags: a tag or a sequence of tags; ``inplace`` / ``out`` (or
            ``torch.Tag.inplace`` / ``torch.Tag.out``) alias the returns.

    Returns:
        The schema.

    Raises:
        SchemaError: a parameter's annotation has no schema type, or the
            function does not fit its ``inplace`` / ``out`` tag.
        ExclusiveTagsError: both ``inplace`` and ``out`` are given.
    """
    tag_list = tags if isinstance(tags, Iterable) and not isinstance(tags, str) else (tags,)
    details = infer_schema_details(
        fn, mutates_args=mutates_args, op_name=op_name, tags=() if tags is None else tag_list
    )
    return details.schema


def register_annotation(annotation: object, schema_type: str) -> Callable[[], None]:
    """Infer ``annotation`` (a class or ``NewType``) as the schema base type ``schema_type``.

    For array types and the like: ``register_annotation(MyArray, "Tensor")``
    makes ``x: MyArray`` infer as ``Tensor`` (and ``list[MyArray]`` as
    ``Tensor[]``). ``schema_type`` is one of Tensor, SymInt, float, bool, str,
    Scalar, ScalarType, Device. Returns a function that removes the mapping
    (calling it again does nothing). Raises `RegistrationError` if the
    annotation is already mapped or is a generic form.

    Args:
        annotation: the class or ``NewType``.
        schema_type: the schema base type it infers as.

    Returns:
        A function that removes the mapping.

    Raises:
        RegistrationError: the annotation is mapped already or generic.
    """
    if typing.get_origin(annotation) is not None or form_key(annotation) in FORMS:
        raise RegistrationError(
            f"register_annotation: {annotation!r} is a generic form, which infer_schema reads "
            "by its structure. Only plain classes and NewTypes map to one schema type. Register "
            "the class itself, as in numpy.ndarray rather than numpy.ndarray[Any, Any]."
        )
    remove = add_annotation(annotation, schema_type)
    _forget()

    def undo() -> None:
        remove()
        _forget()

    return undo

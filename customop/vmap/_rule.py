"""Batching rules: ``register_vmap`` (torch's signature), stored as the op's `VMAP_RULE` extra.

A rule is ``fn(info, in_dims, *args, **kwargs) -> (outputs, out_dims)``, as
``torch.library.register_vmap`` calls it: ``args`` are the op's positional
arguments (defaults filled in) with their batch dimensions *in* them,
``in_dims`` has one entry per positional argument (None when unbatched, an
int for a batched tensor, a list of those for a ``Tensor[]``), ``kwargs``
are the keyword-only arguments, and ``info`` is a `VmapInfo`. The rule
returns the batched outputs and where their batch dimension is (an int or
None per output; one int may stand for every output).

The rule is op metadata, like a partition rule: one `VMAP_RULE` extra per
op, checked against the schema when registered (validate first, then
mutate), and read by ``customop.vmap`` and by the adapters (torch's
``register_vmap``, JAX's batch rules) through `rule_of`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import (
    Any,
    Concatenate,
    Final,
    Literal,
    NamedTuple,
    NoReturn,
    ParamSpec,
    TypeAlias,
    TypeVar,
    final,
    overload,
)

from customop.dispatch import (
    Dispatcher,
    Extra,
    OperatorHandle,
    RegistrationHandle,
    caller_source,
    remember_handle,
)
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import RegistrationError
from customop.ops import OpDefinition, find_handle, operator_handle
from customop.schema import FunctionSchema
from customop.vmap._plan import Plan

__all__ = [
    "RANDOMNESS",
    "VMAP_RULE",
    "Randomness",
    "RuleFn",
    "TypedRule",
    "VmapInfo",
    "VmapRule",
    "register_vmap",
    "rule_of",
]

#: How random ops behave under vmap, as in torch (see ``docs/vmap.md``).
Randomness: TypeAlias = Literal["error", "different", "same"]
RANDOMNESS: Final[tuple[Randomness, ...]] = ("error", "different", "same")
#: ``fn(info, in_dims, *args, **kwargs) -> (outputs, out_dims)``.
RuleFn: TypeAlias = Callable[..., Any]


class VmapInfo(NamedTuple):
    """What a rule learns about the vmap it runs in (torch's ``VmapInfo``).

    Attributes:
        batch_size: The size of the batch dimension.
        randomness: ``"error"``, ``"different"`` or ``"same"``: how random ops
            must behave (``"same"``: one draw for the whole batch).
    """

    batch_size: int
    randomness: Randomness


P = ParamSpec("P")
F = TypeVar("F", bound=RuleFn)
#: A rule for an op whose parameters are ``P``: ``fn(info, in_dims, *args, **kwargs)``,
#: returning ``(outputs, out_dims)``; mypy checks it against the op's signature.
TypedRule: TypeAlias = Callable[Concatenate[VmapInfo, Any, P], tuple[Any, Any]]


@final
class VmapRule:
    """A registered batching rule: the function, and where it was registered.

    Attributes:
        fn: ``fn(info, in_dims, *args, **kwargs) -> (outputs, out_dims)``.
        source: ``"file.py:42"`` of the registration.
        name: The op's name, ``"ns::op"`` (with ``.overload`` when it has one).
        plan: What batching reads of the op's schema when the rule was registered
            (where the tensors are, the defaults, the returns), worked out once.
    """

    __slots__ = ("fn", "name", "plan", "source")

    def __init__(self, fn: RuleFn, schema: FunctionSchema, source: str) -> None:
        self.fn = fn
        self.name = str(schema.name)
        self.source = source
        self.plan = Plan(schema)

    def __repr__(self) -> str:
        return f"<VmapRule {self.name} {_fn_name(self.fn)} at {self.source}>"


def _fn_name(fn: object) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))


#: An op's batching rule, owned by this package (see `customop.dispatch.Extra`).
VMAP_RULE: Final[Extra[VmapRule]] = Extra(
    "vmap rule", owner="customop.vmap", describe=lambda rule: _fn_name(rule.fn)
)


def rule_of(op: object, *, dispatcher: Dispatcher | None = None) -> VmapRule | None:
    """The batching rule registered for ``op`` (an op object or ``"ns::op"``), or None.

    What adapters read to turn a customop rule into their system's (torch's
    ``register_vmap``, a JAX batch rule): ``rule.fn`` is called as
    ``fn(VmapInfo(batch_size, randomness), in_dims, *args, **kwargs)``.

    Args:
        op: A `CustomOpDef`, an `OpOverload`, an `OperatorHandle` or a name.
        dispatcher: Where to look a name up (default: ``customop.dispatcher``).

    Returns:
        The newest live `VmapRule`, else None (also for a name no op has).
    """
    d = default_dispatcher if dispatcher is None else dispatcher
    handle = find_handle(op, d, "rule_of")
    return None if handle is None else handle.extra(VMAP_RULE)


# -- checks (all before anything is registered) ----------------------------------------


def _refuse(api: str, what: str, why: str, fix: str) -> NoReturn:
    raise RegistrationError(f"{api}: {what}. {why}. {fix}.")


_POSITIONAL: Final = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _signature_problem(fn: RuleFn, schema: FunctionSchema) -> str | None:
    """Why ``fn`` cannot be called as ``fn(info, in_dims, *args, **kwargs)``, or None."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None  # builtins and C callables: nothing to compare
    positional = [p for p in params if p.kind in _POSITIONAL]
    var_positional = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    var_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    passed = ["info", "in_dims", *(arg.name for arg in schema.positional_arguments)]
    if len(positional) < len(passed) and not var_positional:
        # A rule written like a kernel, (x, factor), forgot the two leading parameters.
        like_kernel = [p.name for p in positional[:1]] == passed[2:3]
        if len(positional) < 2 or like_kernel:
            return "its first two parameters must be (info, in_dims), then the op's arguments"
        return f"it has no parameter for the op's argument {passed[len(positional)]!r}"
    keywords = {p.name for p in params if p.kind is not inspect.Parameter.POSITIONAL_ONLY}
    for arg in schema.kwarg_only_arguments:
        if arg.name not in keywords and not var_keyword:
            return f"it has no parameter for the op's keyword-only argument {arg.name!r}"
    taken = {p.name for p in positional[: len(passed)]}
    taken |= {arg.name for arg in schema.kwarg_only_arguments}
    for param in params:
        plain = param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD)
        if plain and param.default is inspect.Parameter.empty and param.name not in taken:
            return f"its parameter {param.name!r} is not an argument of the op"
    return None


def check_rule(schema: FunctionSchema, fn: object, api: str) -> None:
    """Raise `RegistrationError` (or TypeError) for a rule that could not be called."""
    name = str(schema.name)
    if not callable(fn):
        raise TypeError(
            f"{api}: the rule must be a function fn(info, in_dims, *args, **kwargs), got "
            f"{fn!r:.200}. It computes {name} on batched inputs. Pass a function."
        )
    for arg in schema.kwarg_only_arguments:
        if arg.tensor_kind is not None:
            _refuse(
                api,
                f"{name} has the keyword-only tensor argument {arg.name!r}",
                "in_dims has one entry per positional argument, so a rule could not learn "
                "where its batch dimension is (torch refuses this too)",
                f"Make {arg.name!r} a positional argument in the schema",
            )
    problem = _signature_problem(fn, schema)
    if problem is not None:
        try:
            shown = f"{_fn_name(fn)}{inspect.signature(fn)}"[:200]
        except (TypeError, ValueError):
            shown = repr(fn)[:200]
        _refuse(
            api,
            f"the rule {shown} does not fit {name}: {problem}",
            "A rule is called as fn(info, in_dims, *args, **kwargs) with the op's positional "
            "arguments by position and its keyword-only ones by name",
            f"Give it the parameters (info, in_dims, {_parameters(schema)})",
        )


def _parameters(schema: FunctionSchema) -> str:
    names = [arg.name for arg in schema.positional_arguments]
    if schema.kwarg_only_arguments:
        names += ["*", *(arg.name for arg in schema.kwarg_only_arguments)]
    return ", ".join(names)


# -- registration --------------------------------------------------------------------


def _add(op: OperatorHandle, rule: VmapRule, api: str) -> RegistrationHandle:
    with op.dispatcher.lock:  # the check and the registration are one write
        existing = op.extra(VMAP_RULE)
        if existing is not None:
            _refuse(
                api,
                f"{op.name} already has the vmap rule {_fn_name(existing.fn)}, from "
                f"{existing.source}; again at {rule.source}",
                "An op is batched one way, or customop.vmap and the adapters could disagree",
                "Remove the first rule's handle first (customop.handle_of(rule).remove())",
            )
        return op.dispatcher.register_extra(op, VMAP_RULE, rule, source=rule.source)


def register_rule(op: object, fn: RuleFn, dispatcher: Dispatcher | None, source: str) -> Any:
    """Check and register ``fn`` as ``op``'s rule; ``fn`` comes back, its handle remembered."""
    d = default_dispatcher if dispatcher is None else dispatcher
    handle = operator_handle(op, d, "register_vmap")
    api = f"{handle.name}.register_vmap" if isinstance(op, OpDefinition) else "register_vmap"
    check_rule(handle.schema, fn, api)
    registered = _add(handle, VmapRule(fn, handle.schema, source), api)
    # A @custom_op's definition owns the rule, so a redefinition removes it.
    if isinstance(op, OpDefinition):
        registered = op.adopt(registered)
    return remember_handle(fn, registered)


# NOTE: an op with a Python signature (a @custom_op, typed by its ParamSpec) has
# its rule checked by mypy too; a name, or an op of a Library, is checked at run time only.
@overload
def register_vmap(
    op: Callable[P, Any], fn: None = None, /, *, dispatcher: Dispatcher | None = None
) -> Callable[[TypedRule[P]], TypedRule[P]]: ...


@overload
def register_vmap(
    op: Callable[P, Any], fn: TypedRule[P], /, *, dispatcher: Dispatcher | None = None
) -> TypedRule[P]: ...


@overload
def register_vmap(
    op: str, fn: None = None, /, *, dispatcher: Dispatcher | None = None
) -> Callable[[F], F]: ...


@overload
def register_vmap(op: str, fn: F, /, *, dispatcher: Dispatcher | None = None) -> F: ...


def register_vmap(
    op: object, fn: RuleFn | None = None, /, *, dispatcher: Dispatcher | None = None
) -> RuleFn | Callable[[RuleFn], RuleFn]:
    """Register ``fn`` as ``op``'s batching rule, as ``torch.library.register_vmap``.

    ``fn(info, in_dims, *args, **kwargs)`` gets the op's positional arguments
    with their batch dimensions in them (``in_dims``: one entry per
    positional argument, None when unbatched) and returns ``(outputs,
    out_dims)``. ``customop.vmap`` uses it for every call of the op on
    batched values, and ``customop.torch.register`` hands it to torch.

    A call or a decorator, returning ``fn`` as torch's does; its handle is
    ``customop.handle_of(fn)``.

    Args:
        op: A `CustomOpDef`, an `OpOverload`, an `OperatorHandle` or a name ``"ns::op"``.
        fn: The rule; its parameters are checked against the op's schema now.
        dispatcher: Where to look a name up (default: ``customop.dispatcher``).

    Returns:
        ``fn`` (or, without ``fn``, a decorator that registers and returns it).

    Raises:
        RegistrationError: ``fn`` cannot take the op's arguments, the op has a
            keyword-only tensor argument, or it already has a rule.

    Examples:
        >>> import numpy as np
        >>> import customop
        >>> d = customop.Dispatcher()
        >>> @customop.custom_op("docvmap::scale", mutates_args=(), dispatcher=d)
        ... def scale(x: np.ndarray, factor: float) -> np.ndarray:
        ...     return x * factor
        >>> @customop.register_vmap(scale)
        ... def scale_rule(info, in_dims, x, factor):
        ...     return scale(x, factor), in_dims[0]
        >>> from customop.vmap import rule_of
        >>> rule_of(scale).fn is scale_rule
        True
        >>> customop.vmap(scale, in_dims=(1, None), dispatcher=d)(np.ones((2, 3)), 2.0)
        array([[2., 2.],
               [2., 2.],
               [2., 2.]])
    """
    # NOTE: decorator-or-call, as torch's: without fn this returns a decorator that
    # registers the function it decorates; both return the function itself.
    source = caller_source()

    def register(rule: RuleFn) -> RuleFn:
        return register_rule(op, rule, dispatcher, source)  # type: ignore[no-any-return]

    return register if fn is None else register(fn)

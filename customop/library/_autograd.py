"""``register_autograd``: a backward formula for an op, stored on its ``Autograd`` key.

The formula is an `AutogradFormula` registered as the op's boxed kernel on the
``Autograd`` alias key, so ``dump_table`` lists it on every ``Autograd*`` key
like any kernel, and removing its handle removes it. What the kernel does when
it runs (record the call for a backward pass) belongs to the autograd layer
above, which installs itself with `set_engine`; until then the kernel only
runs the keys below it.

The meaning is ``torch.library.register_autograd``'s: ``setup_context(ctx,
inputs, output)`` runs after the forward with the op's arguments in schema
order (defaults filled in), and ``backward(ctx, *grads)`` returns one gradient
per input (None for non-tensor inputs and inputs that need none).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, final

from customop.dispatch import (
    Dispatcher,
    DispatchKey,
    DispatchKeySet,
    OperatorHandle,
    RegistrationHandle,
)
from customop.dispatch._global import dispatcher as default_dispatcher
from customop.dispatch._kernel import caller_source
from customop.exceptions import RegistrationError
from customop.schema import FunctionSchema

if TYPE_CHECKING:
    from customop.library._library import Library

__all__ = [
    "AutogradEngine",
    "AutogradFormula",
    "formula_of",
    "register_autograd",
    "register_autograd_on",
    "set_engine",
]

_AUTOGRAD: Final = DispatchKey.Autograd
#: Every key below the lowest Autograd key: what a formula's kernel computes with.
_NOT_AUTOGRAD: Final = ~DispatchKey.Autograd.expansion


class AutogradEngine(Protocol):
    """What runs a formula's kernel: the autograd layer's recorder (see `set_engine`)."""

    def run(
        self,
        formula: AutogradFormula,
        op: OperatorHandle,
        keyset: DispatchKeySet,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        """Run the op below its Autograd keys, and record the call if gradients need it."""
        ...


@final
class _Forward:
    """The engine before the autograd layer installs one: compute, record nothing."""

    def run(
        self,
        formula: AutogradFormula,
        op: OperatorHandle,
        keyset: DispatchKeySet,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        return op.redispatch(keyset & _NOT_AUTOGRAD, *args, **kwargs)


_engine: list[AutogradEngine] = [_Forward()]


def set_engine(engine: AutogradEngine) -> None:
    """Make ``engine`` run every formula's kernel (the autograd layer calls this on import)."""
    _engine[0] = engine


@final
class AutogradFormula:
    """An op's backward formula, as registered: the kernel on its ``Autograd`` key.

    Attributes:
        backward: ``backward(ctx, *grads)``, one gradient per input.
        setup_context: ``setup_context(ctx, inputs, output)``, or None.
        schema: The op's schema when the formula was registered.
        name: The op's name, ``"ns::op"`` (with ``.overload`` when it has one).
    """

    __slots__ = ("__name__", "backward", "name", "schema", "setup_context")

    def __init__(
        self,
        backward: Callable[..., Any],
        setup_context: Callable[..., Any] | None,
        schema: FunctionSchema,
    ) -> None:
        self.backward = backward
        self.setup_context = setup_context
        self.schema = schema
        self.name = str(schema.name)
        # What dumps show for the kernel: the backward the user wrote.
        self.__name__ = f"autograd({getattr(backward, '__name__', 'backward')})"

    def __call__(
        self, op: OperatorHandle, keyset: DispatchKeySet, /, *args: Any, **kwargs: Any
    ) -> Any:
        """The boxed kernel: hand the call to the installed engine."""
        return _engine[0].run(self, op, keyset, args, kwargs)

    def __repr__(self) -> str:
        return f"<AutogradFormula {self.name} {self.__name__}>"


def _handle_of(op: object, dispatcher: Dispatcher, api: str) -> OperatorHandle:
    if isinstance(op, OperatorHandle):
        return op
    if isinstance(op, str):
        return dispatcher.find_schema_or_throw(op)
    handle = getattr(getattr(op, "op", op), "handle", None)
    if isinstance(handle, OperatorHandle):
        return handle
    raise TypeError(
        f"{api}: expected an op (a CustomOpDef, an OpOverload or a name like 'ns::op'), "
        f"got {op!r:.200}. A formula attaches to a defined operator. Pass the op or its name."
    )


def formula_of(op: object, *, dispatcher: Dispatcher | None = None) -> AutogradFormula | None:
    """The formula registered for ``op`` (an op object or ``"ns::op"``), or None.

    Args:
        op: A `CustomOpDef`, an `OpOverload`, an `OperatorHandle` or a name.
        dispatcher: Where to look a name up (default: ``customop.dispatcher``).

    Returns:
        The newest live `AutogradFormula` on the op's ``Autograd`` key, else None
        (also for a name no op has).
    """
    d = default_dispatcher if dispatcher is None else dispatcher
    if isinstance(op, str):
        found = d.find_op(op)
        if found is None:
            return None
        op = found
    handle = _handle_of(op, d, "formula_of")
    record = handle._entry.top(_AUTOGRAD)
    fn = None if record is None else record.fn
    return fn if isinstance(fn, AutogradFormula) else None


# -- checks (all before anything is registered) ----------------------------------------


def _positional(fn: Callable[..., Any]) -> tuple[int, int, bool] | None:
    """``(required, accepted, varargs)`` positional parameter counts, or None if unknown."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p for p in params if p.kind in kinds]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    varargs = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    kw_required = [
        p
        for p in params
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty
    ]
    if kw_required:
        return (len(required), -1, varargs)  # a required keyword: nothing can call it
    return (len(required), len(positional), varargs)


def _shown(fn: Callable[..., Any]) -> str:
    try:
        return f"{getattr(fn, '__name__', fn)}{inspect.signature(fn)}"[:200]
    except (TypeError, ValueError):
        return repr(fn)[:200]


def _takes(fn: Callable[..., Any], count: int) -> bool:
    found = _positional(fn)
    if found is None:
        return True  # builtins and C callables: nothing to compare
    required, accepted, varargs = found
    return accepted >= 0 and required <= count and (varargs or accepted >= count)


def check_formula(
    schema: FunctionSchema,
    backward: object,
    setup_context: object,
    api: str,
    kernel_keys: frozenset[DispatchKey],
) -> None:
    """Raise `RegistrationError` (or TypeError) for a formula torch would refuse, or worse."""
    name = str(schema.name)
    if not callable(backward):
        raise TypeError(
            f"{api}: backward must be a function backward(ctx, *grads), got {backward!r:.200}. "
            f"It computes {name}'s input gradients. Pass a function."
        )
    if setup_context is not None and not callable(setup_context):
        raise TypeError(
            f"{api}: setup_context must be a function setup_context(ctx, inputs, output) or "
            f"None, got {setup_context!r:.200}. It saves what backward needs. Pass a function."
        )
    if schema.is_mutable:
        raise RegistrationError(
            f"{api}: {name} mutates {', '.join(map(repr, schema.mutated_arguments))}. A "
            "formula maps input values to gradients, which a write in place invalidates "
            "(torch refuses this too). Make the op functional (return a new tensor), or "
            "register the formula on a functional op that calls it."
        )
    if not schema.tensor_argument_positions:
        raise RegistrationError(
            f"{api}: {name} has no tensor inputs (its schema is {schema}). Gradients flow "
            "only to tensor inputs, so there is nothing to differentiate. Register formulas "
            "on ops that take tensors."
        )
    if DispatchKey.CompositeImplicitAutograd in kernel_keys:
        raise RegistrationError(
            f"{api}: {name} has a CompositeImplicitAutograd kernel. Under autograd that "
            "decomposition runs instead of any formula, and its gradient comes from the ops "
            "it calls, as in torch. Drop the formula, or register the body as "
            "CompositeExplicitAutograd (device_types=None in @custom_op) to use one."
        )
    if setup_context is not None and not _takes(setup_context, 3):
        raise RegistrationError(
            f"{api}: setup_context {_shown(setup_context)} does not take (ctx, inputs, output)"
            f" for {name}. It is called with exactly those three arguments after the forward. "
            "Give it the parameters (ctx, inputs, output)."
        )
    grads = 1 + len(schema.returns)
    if not _takes(backward, grads):
        outs = ", ".join(f"grad{i}" for i in range(len(schema.returns))) or "no grads"
        raise RegistrationError(
            f"{api}: backward {_shown(backward)} does not take (ctx, {outs}) for {name}. It "
            f"is called with ctx and one gradient per output ({len(schema.returns)}). Give "
            "it those parameters, or (ctx, *grads)."
        )


# -- registration --------------------------------------------------------------------


def _register(
    handle: OperatorHandle,
    backward: Callable[..., Any],
    setup_context: Callable[..., Any] | None,
    api: str,
    source: str,
) -> RegistrationHandle:
    schema = handle.schema
    kernel_keys = frozenset(handle._entry.kernels)
    check_formula(schema, backward, setup_context, api, kernel_keys)
    formula = AutogradFormula(backward, setup_context, schema)
    return handle.dispatcher.register_impl(
        handle.name, _AUTOGRAD, formula, boxed=True, source=source
    )


def register_autograd_on(
    library: Library,
    op: OperatorHandle,
    backward: Callable[..., Any],
    setup_context: Callable[..., Any] | None,
) -> RegistrationHandle:
    """The formula of ``op``, owned by ``library`` (a @custom_op's: removed with it)."""
    api = f"{op.name}.register_autograd"
    registered = _register(op, backward, setup_context, api, caller_source())
    library._adopt(registered)
    return registered


def register_autograd(
    op: object,
    backward: Callable[..., Any],
    /,
    *,
    setup_context: Callable[..., Any] | None = None,
    dispatcher: Dispatcher | None = None,
) -> RegistrationHandle:
    """Register ``backward`` (and ``setup_context``) as ``op``'s autograd formula.

    torch's ``torch.library.register_autograd``, also for ops defined with
    `Library`. ``setup_context(ctx, inputs, output)`` runs after the forward;
    ``backward(ctx, *grads)`` returns one gradient per input.

    Args:
        op: A `CustomOpDef`, an `OpOverload`, an `OperatorHandle` or a name ``"ns::op"``.
        backward: ``backward(ctx, *grads) -> grad or tuple of grads``.
        setup_context: ``setup_context(ctx, inputs, output)``, or None.
        dispatcher: Where to look a name up (default: ``customop.dispatcher``).

    Returns:
        The handle; removing it removes the formula.

    Raises:
        RegistrationError: for a mutable op, an op without tensor inputs, an op
            with a CompositeImplicitAutograd kernel, or functions whose
            parameters cannot take the arguments they are called with.
    """
    register = getattr(op, "register_autograd", None)
    if register is not None and hasattr(op, "_library"):
        # A @custom_op: its own library owns the formula, so a redefinition removes it.
        return register(backward, setup_context=setup_context)  # type: ignore[no-any-return]
    d = default_dispatcher if dispatcher is None else dispatcher
    handle = _handle_of(op, d, "register_autograd")
    return _register(handle, backward, setup_context, "register_autograd", caller_source())

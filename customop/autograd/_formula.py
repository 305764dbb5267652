"""``register_autograd``: a backward formula for an op, stored on its ``AutogradOther`` key.

The formula is an `AutogradFormula` registered as the op's boxed kernel on
`FORMULA_KEY`, so ``dump_table`` lists it like any kernel, and removing its
handle removes it. When it runs (inside a transform, which includes the key)
it records the call for a backward pass (`customop.autograd._engine.record`).
A formula is a kernel, not an extra, because it is what the key runs: the
table that serves every other key serves this one too.

NOTE: why AutogradOther and not the Autograd alias. Every array carries its
backend's autograd key (``AutogradCPU`` for numpy), so a kernel on those keys
would run on every call of the op, transform or not, and cost it the fast
path (about 10x). No array carries AutogradOther: the transforms include it
while they record, as tracing includes ``Tracer``, so an op with a formula
costs nothing extra outside them. Kernels users register on the per-backend
autograd keys keep their meaning.

The meaning is ``torch.library.register_autograd``'s: ``setup_context(ctx,
inputs, output)`` runs after the forward with the op's arguments in schema
order (defaults filled in), and ``backward(ctx, *grads)`` returns one gradient
per input (None for non-tensor inputs and inputs that need none).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar, final, overload

from customop.autograd._engine import FORMULA_KEY, record
from customop.dispatch import (
    Dispatcher,
    DispatchKey,
    DispatchKeySet,
    OperatorHandle,
    RegistrationHandle,
    caller_source,
)
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import RegistrationError, UnsupportedError
from customop.ops import OpDefinition, find_handle, operator_handle
from customop.schema import OUT, FunctionSchema, aliasing_tag

__all__ = [
    "FORMULA_KEY",
    "AutogradFormula",
    "check_formula",
    "formula_of",
    "register_autograd",
    "torch_form",
]


@final
class AutogradFormula:
    """An op's backward formula, as registered: the kernel on its ``AutogradOther`` key.

    Attributes:
        backward: ``backward(ctx, *grads)``, one gradient per input.
        setup_context: ``setup_context(ctx, inputs, output)``, or None.
        schema: The op's schema when the formula was registered.
        name: The op's name, ``"ns::op"`` (with ``.overload`` when it has one).
    """

    # A dict: each slot's descriptor gets its docstring.
    __slots__ = {  # noqa: RUF023 -- documentation order
        "backward": "``backward(ctx, *grads)``, one gradient per input.",
        "setup_context": "``setup_context(ctx, inputs, output)``, or None.",
        "schema": "The op's schema when the formula was registered.",
        "name": 'The op\'s name, ``"ns::op"`` (with ``.overload`` when it has one).',
        "torch_form": (
            "Whether setup_context takes torch's ``(ctx, inputs, keyword_only_inputs, "
            "output)`` (an op with keyword-only arguments): then ``inputs`` are the "
            "positional arguments and backward returns their gradients only."
        ),
        "__name__": "What dumps show for the kernel: ``autograd(<backward's name>)``.",
    }

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
        self.torch_form = torch_form(schema, setup_context)
        # What dumps show for the kernel: the backward the user wrote.
        self.__name__ = f"autograd({getattr(backward, '__name__', 'backward')})"

    def __call__(
        self, op: OperatorHandle, keyset: DispatchKeySet, /, *args: Any, **kwargs: Any
    ) -> Any:
        """The boxed kernel: compute below the Autograd keys, and record the call."""
        return record(self, op, keyset, args, kwargs)

    def __repr__(self) -> str:
        return f"<AutogradFormula {self.name} {self.__name__}>"


def formula_of(op: object, *, dispatcher: Dispatcher | None = None) -> AutogradFormula | None:
    """The formula registered for ``op`` (an op object or ``"ns::op"``), or None.

    Args:
        op: A `CustomOpDef`, an `OpOverload`, an `OperatorHandle` or a name.
        dispatcher: Where to look a name up (default: ``customop.dispatcher``).

    Returns:
        The newest live `AutogradFormula` on the op's `FORMULA_KEY`, else None
        (also for a name no op has).
    """
    handle = find_handle(op, default_dispatcher if dispatcher is None else dispatcher, "formula_of")
    if handle is None:
        return None
    fn = handle.registered_kernel(FORMULA_KEY)
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


def torch_form(schema: FunctionSchema, setup_context: object) -> bool:
    """Whether ``setup_context`` is torch's ``(ctx, inputs, keyword_only_inputs, output)``.

    torch calls it so for an op with keyword-only arguments; customop accepts
    that form there, beside its own three-argument one.
    """
    return (
        callable(setup_context)
        and any(arg.kwarg_only for arg in schema.arguments)
        and _positional(setup_context) is not None
        and _takes(setup_context, 4)
        and not _takes(setup_context, 3)
    )


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
    keyword_tensors = [
        schema.arguments[i].name
        for i, _ in schema.tensor_argument_positions
        if schema.arguments[i].kwarg_only
    ]
    if keyword_tensors:
        raise UnsupportedError(
            f"{api}: {name} takes keyword-only tensor arguments "
            f"({', '.join(map(repr, keyword_tensors))}); register_autograd with kwarg-only "
            "Tensor args is not supported. torch passes no gradient to them, so a formula "
            "would silently lose theirs once the op is registered in torch. Make those "
            "tensors positional (before the '*'), or differentiate through another op."
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
    if setup_context is not None and not (
        _takes(setup_context, 3) or torch_form(schema, setup_context)
    ):
        raise RegistrationError(
            f"{api}: setup_context {_shown(setup_context)} does not take (ctx, inputs, output)"
            f" for {name}. It is called with exactly those three arguments after the forward "
            "(or, for an op with keyword-only arguments, torch's four: ctx, inputs, "
            "keyword_only_inputs, output). Give it the parameters (ctx, inputs, output)."
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
    if aliasing_tag(handle.tags, api) == OUT:
        raise RegistrationError(
            f"{api}: {handle.name} is tagged out (cannot register autograd formula for operator "
            "tagged with torch.Tag.out). Out variants do not support autograd: their outputs "
            "are buffers the caller passed in, written in place, as in torch. Register the "
            "formula on the functional op the out= variant computes."
        )
    kernel_keys = handle.kernel_keys()
    check_formula(schema, backward, setup_context, api, kernel_keys)
    formula = AutogradFormula(backward, setup_context, schema)
    return handle.dispatcher.register_impl(
        handle.name, FORMULA_KEY, formula, boxed=True, source=source
    )


R = TypeVar("R")
Several = TypeVar("Several", bound=tuple[Any, ...])


# NOTE: typed by the op's result, as `CustomOpDef.register_autograd` is. One
# output: mypy checks ``backward(ctx, grad)`` and ``setup_context``'s ``output``
# against it. Several (a tuple): ``backward(ctx, *grads)`` is checked at
# registration only. A name, or a Library op's `OpOverload`, is untyped.
@overload
def register_autograd(
    op: Callable[..., R],
    backward: Callable[[Any, R], object],
    /,
    *,
    setup_context: Callable[[Any, tuple[Any, ...], R], object] | None = None,
    dispatcher: Dispatcher | None = None,
) -> RegistrationHandle: ...


@overload
def register_autograd(
    op: Callable[..., Several],
    backward: Callable[..., object],
    /,
    *,
    setup_context: Callable[[Any, tuple[Any, ...], Several], object] | None = None,
    dispatcher: Dispatcher | None = None,
) -> RegistrationHandle: ...


@overload
def register_autograd(
    op: str,
    backward: Callable[..., object],
    /,
    *,
    setup_context: Callable[..., object] | None = None,
    dispatcher: Dispatcher | None = None,
) -> RegistrationHandle: ...


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
    d = default_dispatcher if dispatcher is None else dispatcher
    handle = operator_handle(op, d, "register_autograd")
    api = (
        f"{handle.name}.register_autograd" if isinstance(op, OpDefinition) else "register_autograd"
    )
    registered = _register(handle, backward, setup_context, api, caller_source())
    # A @custom_op's definition owns the formula, so a redefinition removes it.
    return op.adopt(registered) if isinstance(op, OpDefinition) else registered

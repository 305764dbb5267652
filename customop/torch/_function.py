"""torch's custom_op autograd kernel, with one ``autograd.Function`` class for every op.

``torch._library.autograd.make_autograd_impl`` (what torch's ``custom_op``
and ``register_autograd`` use) makes two new classes per op, an
``autograd.Function`` and its backward, which torch keeps alive after the
op's library is destroyed (about 16 KB per op, measured on torch 2.13). The
mirror registers and removes ops often (every register/remove cycle, and
every change of which keys have kernels), so this module gives the same
semantics with two classes made once: `autograd_kernel` builds the Autograd
kernel of one op from its torch op and an ``InfoProtocol`` (the op's
current formula), and passes the per-op facts to the shared class through
the ``_Call`` metadata argument, as torch's passes its keyset.

Semantics follow torch 2.13's ``make_autograd_impl`` line by line: the
forward runs below autograd (so under no_grad), ``setup_context`` gets the
arguments with their defaults filled (and ``keyword_only_inputs`` when the
schema has keyword-only arguments), backward without a formula raises
torch's "no autograd formula was registered", ``Tensor[]`` arguments and
returns go through ``supports_tensorlist``, and ``Tag.out`` ops refuse grad.
"""

from __future__ import annotations

from typing import Any, Final, final

import torch

from customop.torch._eager import Trampoline, eager_only

__all__ = ["autograd_kernel"]

_C: Final[Any] = torch._C
_utils: Final[Any] = torch._library.utils
_supports_tensorlist: Final[Any] = torch._library.autograd.supports_tensorlist


@final
class _Call:
    """The per-call metadata the shared Function gets as its last argument."""

    __slots__ = ("info", "keyset", "keyword_only", "op", "with_keywords")

    def __init__(
        self, op: Any, info: Any, keyset: Any, keyword_only: dict[str, Any], with_keywords: bool
    ) -> None:
        self.op, self.info, self.keyset = op, info, keyset
        self.keyword_only, self.with_keywords = keyword_only, with_keywords


def _below(call: _Call, args: tuple[Any, ...]) -> Any:
    return call.op.redispatch(call.keyset & _C._after_autograd_keyset, *args, **call.keyword_only)


@eager_only
def _forward(ctx: Any, *args: Any) -> Any:
    call: _Call = args[-1]
    args = args[:-1]
    with _C._AutoDispatchBelowAutograd():
        result = _below(call, args)
        setup = call.info._setup_context_fn
        if setup:
            # The dispatcher drops arguments equal to their defaults: put them back.
            full, keywords = _utils.fill_defaults(call.op._schema, args, call.keyword_only)
            if call.with_keywords:
                setup(ctx=ctx, inputs=full, keyword_only_inputs=keywords, output=result)
            else:
                setup(ctx=ctx, inputs=full, output=result)
    # The formula of the forward's generation: a redefinition meanwhile must not
    # give this graph another op's backward (issue #27 §1).
    ctx._customop_call = call
    ctx._customop_backward = call.info._backward_fn
    return result


@eager_only
def _backward(ctx: Any, *grads: Any) -> Any:
    call: _Call = ctx._customop_call
    backward = ctx._customop_backward
    if not backward:
        raise RuntimeError(
            f"Trying to backward through {call.op} but no autograd formula was registered. "
            "Please use register_autograd to add one."
        )
    before = ctx.needs_input_grad
    try:
        ctx.needs_input_grad = before[:-1]  # not the metadata argument's
        result = backward(ctx, *grads)
    finally:
        ctx.needs_input_grad = before
    return (
        *_counted(call, result if isinstance(result, tuple) else (result,), len(before) - 1),
        None,
    )


def _counted(call: _Call, result: tuple[Any, ...], given: int) -> tuple[Any, ...]:
    """One gradient per argument the forward got, or per positional argument of the
    schema (torch 2.14's rule: the dispatcher drops arguments equal to their defaults)."""
    if len(result) == given:  # before reading the schema: ~1.5 us per backward
        return result
    positional = sum(1 for a in call.op._schema.arguments if not a.kwarg_only)
    if len(result) == positional > given:
        return result[:given]
    expected = str(given) if positional == given else f"{given} or {positional}"
    raise RuntimeError(
        f"The backward formula for {call.op} returned an incorrect number of gradients "
        f"(expected {expected}, got {len(result)}). Expected one gradient for each forward "
        "input, or for each positional input to the operator. Use None for inputs that do "
        "not require a gradient."
    )


def _function(name: str) -> Any:
    namespace = {"forward": staticmethod(_forward), "backward": staticmethod(_backward)}
    return type(name, (torch.autograd.Function,), namespace)


#: The shared Functions: one for ops with Tensor[] arguments or returns (pytree'd).
_PLAIN: Final[Any] = _function("CustomopAutograd")
_LISTS: Final[Any] = _supports_tensorlist(_function("CustomopAutogradTensorList"))


def autograd_kernel(op: Any, info: Any) -> Trampoline:
    """The ``Autograd`` kernel (``with_keyset=True``) of torch op ``op``, formula from ``info``."""
    return _AutogradKernel(op, info)


class _AutogradKernel(Trampoline):
    __slots__ = ("function", "info", "is_out", "op", "with_keywords")

    def __init__(self, op: Any, info: Any) -> None:
        schema = op._schema
        lists = any(
            _utils.is_tensorlist_like_type(a.type) for a in (*schema.arguments, *schema.returns)
        )
        self.op, self.info = op, info
        self.function = _LISTS if lists else _PLAIN
        self.with_keywords = bool(_utils.has_kwarg_only_args(schema))
        self.is_out = bool(_utils.is_out(op))

    def __call__(self, keyset: Any, *args: Any, **keyword_only: Any) -> Any:
        call = _Call(self.op, self.info, keyset, keyword_only, self.with_keywords)
        grad = _C.is_grad_enabled()
        if self.is_out:
            if grad and _C._any_requires_grad(*args, **keyword_only):
                raise RuntimeError(
                    f"{self.op._opname}(): functions with out=... arguments don't support "
                    "automatic differentiation, but one of the arguments requires grad."
                )
        elif grad and _C._any_requires_grad(*args):
            return self.function.apply(*args, call)
        with _C._AutoDispatchBelowAutograd():
            return _below(call, args)

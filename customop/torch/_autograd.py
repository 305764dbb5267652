"""customop's autograd, as torch's: the formula, the no-formula error, Autograd-key kernels.

torch's own ``custom_op`` gives every op an ``Autograd`` kernel built by
``torch._library.autograd.make_autograd_impl`` (here: `autograd_kernel`, the
same without two new classes per op): with an input that needs
grad (and grad mode on) the forward runs inside an ``autograd.Function``
(so the kernel runs below autograd, under no_grad), and backward calls the
registered formula, or raises torch's "no autograd formula was registered"
error when there is none. The mirror registers the same kernel, built on an
`_Info` whose formula is customop's *current* one (looked up per call), for

* every op with a customop formula, and
* every ``@custom_op`` definition (as torch's ``custom_op`` does), so that
  backward through one without a formula raises torch's error instead of
  torch's warning fallback for ``Library`` ops.

It is registered directly (not through ``torch.library.register_autograd``,
which refuses view ops such as ``(Tensor(a) x) -> Tensor(a)`` that torch's
``custom_op`` and customop accept).

torch calls ``setup_context(ctx=, inputs=, output=)``, with
``keyword_only_inputs=`` when the schema has keyword-only arguments. A
customop formula written in torch's four-argument form receives them as
they come; one in customop's three-argument form receives every argument in
schema order, and its backward's gradients for keyword-only arguments
(which torch does not take) are dropped.

Kernels users register on customop's ``Autograd`` keys (``Library.impl(...,
"Autograd")``) are mirrored on torch's per-backend autograd keys by
`autograd_trampoline`, so they keep running once the op is bridged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from customop.adapter import select_kernel
from customop.autograd import formula_of
from customop.dispatch import DispatchKey, DispatchKeySet, OperatorHandle, epoch
from customop.torch._eager import KernelLibrary, Trampoline, eager_only
from customop.torch._function import autograd_kernel

if TYPE_CHECKING:
    from customop.autograd import AutogradFormula

__all__ = ["AUTOGRAD_KEYS", "autograd_trampoline", "has_formula", "register_formula"]

#: customop's per-backend autograd keys that have a torch key of the same name.
AUTOGRAD_KEYS: Final = (
    DispatchKey.AutogradCPU,
    DispatchKey.AutogradCUDA,
    DispatchKey.AutogradPrivateUse1,
    DispatchKey.AutogradMeta,
)
_BACKEND_BITS: Final = DispatchKeySet(*(k for k in DispatchKey if k.is_backend)).bits


def has_formula(handle: OperatorHandle) -> bool:
    """Whether the op has a customop autograd formula now."""
    return formula_of(handle) is not None


class _Info:
    """torch's ``InfoProtocol``: the op's current customop formula, read per use."""

    __slots__ = ("_handle", "_keyword_only", "_seen")

    def __init__(self, handle: OperatorHandle) -> None:
        self._handle = handle
        self._keyword_only = tuple(a.name for a in handle.schema.arguments if a.kwarg_only)
        # (epoch token, backward, setup_context): looked up again after any registration.
        self._seen: tuple[object, Any, Any] = (None, None, None)

    def _current(self) -> tuple[object, Any, Any]:
        token = epoch.token
        seen = self._seen
        if seen[0] is not token:
            formula = formula_of(self._handle)
            backward = None if formula is None else self._backward_of(formula)
            setup = None
            if formula is not None and formula.setup_context is not None:
                setup = self._setup_of(formula)
            seen = self._seen = (token, backward, setup)
        return seen

    @property
    def _backward_fn(self) -> Callable[..., Any] | None:
        return self._current()[1]  # type: ignore[no-any-return]

    @property
    def _setup_context_fn(self) -> Callable[..., Any] | None:
        return self._current()[2]  # type: ignore[no-any-return]

    def _setup_of(self, formula: AutogradFormula) -> Callable[..., Any]:
        setup = formula.setup_context
        names = self._keyword_only

        @eager_only
        def setup_context(ctx: Any, inputs: Any, output: Any, **rest: Any) -> None:
            if "keyword_only_inputs" not in rest:
                setup(ctx, tuple(inputs), output)  # type: ignore[misc]
                return
            keyword = rest["keyword_only_inputs"]
            if formula.torch_form:
                setup(ctx, tuple(inputs), keyword, output)  # type: ignore[misc]
            else:  # customop's form: every argument, in schema order
                full = (*inputs, *(keyword.get(n) for n in names))
                setup(ctx, full, output)  # type: ignore[misc]

        return setup_context

    def _backward_of(self, formula: AutogradFormula) -> Callable[..., Any]:
        if not self._keyword_only or formula.torch_form:
            return formula.backward  # as torch's custom_op calls it: no frame in between
        cut = len(self._handle.schema.arguments) - len(self._keyword_only)

        @eager_only
        def backward(ctx: Any, *grads: Any) -> Any:
            result = formula.backward(ctx, *grads)
            if isinstance(result, tuple) and len(result) > cut:
                return result[:cut]  # torch takes no gradient for keyword-only arguments
            return result

        return backward


def register_formula(
    handle: OperatorHandle, torch_op: Any, lib: KernelLibrary, impl_name: str
) -> None:
    """Register torch's autograd kernel for ``handle`` (its current formula), owned by ``lib``."""
    kernel = autograd_kernel(torch_op, _Info(handle))
    lib.impl(impl_name, kernel, "Autograd", with_keyset=True)


def autograd_trampoline(handle: OperatorHandle, key: DispatchKey) -> Trampoline:
    """torch's kernel for an autograd key: customop's current kernel for the same key.

    The call's own backend keys come along, so a boxed kernel can redispatch below.
    """
    return _AutogradKeyKernel(handle, DispatchKeySet(key).bits)


class _AutogradKeyKernel(Trampoline):
    __slots__ = ("bit", "handle")

    def __init__(self, handle: OperatorHandle, bit: int) -> None:
        self.handle, self.bit = handle, bit

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        handle = self.handle
        keys = (handle.dispatch_keyset(*args, **kwargs).bits & _BACKEND_BITS) | self.bit
        return select_kernel(handle, keys)(*args, **kwargs)

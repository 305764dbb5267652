"""Kernels written for torch's dispatcher, run by customop's: autograd keys and autograd.Functions.

torch code registers an ``autograd.Function`` (``lib.impl("foo", Foo.apply,
"Autograd")``, or a function that calls one) on an autograd key, and its
``forward`` calls the op again inside ``torch._C._AutoDispatchBelowAutograd()``,
a guard that customop's dispatcher cannot see. ``Library.impl`` adapts such
kernels so they behave on customop as on torch:

* a kernel on an autograd key (``Autograd``, ``AutogradCPU``, ...) called with
  torch tensors runs with customop's autograd keys excluded, so the op called
  from its forward reaches the backend kernel, as torch's guard makes it;
* called with customop fakes and no torch tensor, it is skipped: the call goes
  on below the autograd keys (to the fake impl), because fakes carry no
  gradients and a torch ``autograd.Function`` cannot take them;
* a torch ``autograd.Function``'s ``apply`` on another key (a
  CompositeImplicitAutograd decomposition) called with fakes runs the
  Function's ``forward`` as a plain function, with a context that records
  nothing: torch's autograd machinery never sees a customop fake;
* anything else (numpy arrays) runs the kernel as registered.

Only kernels on autograd keys and ``autograd.Function`` kernels are wrapped;
every other kernel keeps its direct call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal

from customop.dispatch import DispatchKey, DispatchKeySet, OperatorHandle, exclude_keys
from customop.tensor import FakeTensor

__all__ = ["adapt_kernel", "torch_function_class"]

#: Every runtime autograd key, AutogradOther (customop's formulas) included.
_AUTOGRAD: Final = DispatchKeySet(*(key for key in DispatchKey if key.is_autograd))
_TORCH_TENSOR: dict[type, bool] = {}


def _is_torch_tensor(value: object) -> bool:
    kind = type(value)
    found = _TORCH_TENSOR.get(kind)
    if found is None:
        # By class name, so customop never imports torch.
        found = any(c.__name__ == "Tensor" and c.__module__ == "torch" for c in kind.__mro__)
        if len(_TORCH_TENSOR) < 256:
            _TORCH_TENSOR[kind] = found
    return found


def _kind(values: tuple[Any, ...]) -> Literal["torch", "fake", "other"]:
    """What the arguments hold: torch tensors, customop fakes (and no torch tensor), or neither."""
    fake = False
    for value in values:
        items = value if isinstance(value, list | tuple) else (value,)
        for item in items:
            if _is_torch_tensor(item):
                return "torch"
            fake = fake or isinstance(item, FakeTensor)
    return "fake" if fake else "other"


def torch_function_class(fn: object) -> type | None:
    """The ``torch.autograd.Function`` subclass whose ``apply`` ``fn`` is, else None."""
    owner = getattr(fn, "__self__", None)
    if not isinstance(owner, type) or getattr(fn, "__name__", None) != "apply":
        return None
    for base in owner.__mro__:
        if base.__name__ == "Function" and base.__module__ == "torch.autograd.function":
            return owner
    return None


class _RecordingNothing:
    """The ``ctx`` of an autograd.Function's forward run on fakes: it keeps nothing."""

    def save_for_backward(self, *tensors: Any) -> None:
        """Nothing to save: no backward runs on fakes."""

    def mark_dirty(self, *tensors: Any) -> None:
        """Nothing to record."""

    def mark_non_differentiable(self, *tensors: Any) -> None:
        """Nothing to record."""

    def set_materialize_grads(self, value: bool) -> None:
        """Nothing to record."""


def _forward_on_fakes(owner: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    forward = owner.forward  # type: ignore[attr-defined]
    base_setup = next(c for c in owner.__mro__ if c.__name__ == "Function").setup_context  # type: ignore[attr-defined]
    if getattr(owner, "setup_context", base_setup) is not base_setup:
        return forward(*args, **kwargs)  # the forward of a Function with setup_context has no ctx
    return forward(_RecordingNothing(), *args, **kwargs)


def adapt_kernel(
    fn: Callable[..., Any], key: DispatchKey | None, registered: object
) -> Callable[..., Any] | None:
    """A boxed kernel that runs ``fn`` as torch would on ``key``; None when ``fn`` needs none.

    ``registered`` is what the user registered (``fn`` may wrap it to convert dtypes).
    """
    owner = torch_function_class(registered)
    autograd = key is not None and (key.is_autograd or key is DispatchKey.Autograd)
    if not autograd and owner is None:
        return None

    def kernel(op: OperatorHandle, keyset: DispatchKeySet, *args: Any, **kwargs: Any) -> Any:
        kind = _kind((*args, *kwargs.values()))
        if kind == "fake" and autograd:
            return op.redispatch(keyset - _AUTOGRAD, *args, **kwargs)
        if kind == "fake" and owner is not None:
            return _forward_on_fakes(owner, args, kwargs)
        if kind == "torch" and autograd:
            with exclude_keys(_AUTOGRAD):  # torch's _AutoDispatchBelowAutograd, seen by customop
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)

    name = getattr(owner, "__qualname__", None)
    kernel.__name__ = kernel.__qualname__ = (
        f"{name}.apply" if name else getattr(fn, "__name__", "kernel")
    )
    kernel.__wrapped__ = fn  # type: ignore[attr-defined]  # signature checks and dumps see fn
    return kernel

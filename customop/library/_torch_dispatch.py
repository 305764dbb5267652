"""``register_torch_dispatch``: an op's own rule under a dispatch mode or tensor subclass.

torch's ``torch.library.register_torch_dispatch(op, cls, fn)`` makes ``fn(mode,
func, types, args, kwargs)`` run for ``op`` instead of ``cls.__torch_dispatch__``.
With a customop `DispatchMode` class it is customop's
`customop.dispatch.register_dispatch_mode`. With a torch class (a
``TorchDispatchMode`` or a tensor subclass) the rule is a per-op fact, the
`TORCH_DISPATCH` extra, which ``customop.torch`` registers in torch with the
op: torch's modes see torch ops only, so the rule applies once the op is
registered in torch (``customop.torch.register``), in whatever order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, TypeVar, overload

from customop.dispatch import (
    Dispatcher,
    DispatchMode,
    Extra,
    RegistrationHandle,
    caller_source,
    register_dispatch_mode,
)
from customop.dispatch import dispatcher as default_dispatcher
from customop.library._library import Library
from customop.library._registered import remember_handle
from customop.ops import OpDefinition, operator_handle

__all__ = ["TORCH_DISPATCH", "register_torch_dispatch"]

F = TypeVar("F", bound=Callable[..., Any])

#: The op's torch dispatch rules, torch class -> rule; each registration's value
#: holds the rules before it too, so removing it restores them.
TORCH_DISPATCH: Final[Extra[Mapping[type, Callable[..., Any]]]] = Extra(
    "torch dispatch rules",
    owner="customop.library",
    describe=lambda rules: ", ".join(cls.__name__ for cls in rules),
)


@overload
def register_torch_dispatch(
    op: object,
    torch_dispatch_class: type,
    fn: None = None,
    /,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
) -> Callable[[F], F]: ...


@overload
def register_torch_dispatch(
    op: object,
    torch_dispatch_class: type,
    fn: F,
    /,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
) -> F: ...


def register_torch_dispatch(
    op: object,
    torch_dispatch_class: type,
    fn: F | None = None,
    /,
    *,
    lib: Library | None = None,
    dispatcher: Dispatcher | None = None,
) -> F | Callable[[F], F]:
    """Run ``fn(mode, func, types, args, kwargs)`` for ``op`` under ``torch_dispatch_class``.

    torch's ``torch.library.register_torch_dispatch``: a decorator without
    ``fn``, and the function returned either way (``customop.handle_of(fn)``
    is the handle).

    Args:
        op: A `CustomOpDef`, an `OpOverload`, an `OperatorHandle` or a name.
        torch_dispatch_class: A customop `DispatchMode` subclass, or a torch
            ``TorchDispatchMode`` or tensor subclass (the rule reaches torch with
            the op's ``customop.torch.register``).
        fn: The rule.
        lib: A `Library` that owns the registration.
        dispatcher: The dispatcher of a name (default: ``customop.dispatcher``).

    Returns:
        ``fn``, or a decorator that registers the function it decorates.

    Raises:
        TypeError: ``torch_dispatch_class`` is not a class, or ``fn`` is not callable.
    """
    # NOTE: decorator-or-call, as register_kernel: both forms return the function.
    api = "register_torch_dispatch"
    d = lib.dispatcher if lib is not None else dispatcher or default_dispatcher
    handle = operator_handle(op, d, api)
    if not isinstance(torch_dispatch_class, type):
        raise TypeError(
            f"{api}: {torch_dispatch_class!r:.80} is not a class. The rule applies while a "
            "mode of that class is active, or to tensors of that subclass. Pass the class."
        )

    def register(rule: F) -> F:
        if not callable(rule):
            raise TypeError(
                f"{api}: the rule {rule!r:.80} for {handle.name} is not callable. It is called "
                "as fn(mode, func, types, args, kwargs). Pass a function."
            )
        if issubclass(torch_dispatch_class, DispatchMode):
            registered = register_dispatch_mode(handle, torch_dispatch_class, rule)
        else:
            before = handle.extra(TORCH_DISPATCH)
            rules: dict[type, Callable[..., Any]] = dict(before) if before else {}
            rules[torch_dispatch_class] = rule
            registered = d.register_extra(
                handle, TORCH_DISPATCH, MappingProxyType(rules), source=caller_source()
            )
        _own(registered, op, lib)
        return remember_handle(rule, registered)

    return register if fn is None else register(fn)


def _own(registered: RegistrationHandle, op: object, lib: Library | None) -> None:
    if lib is not None:
        lib._adopt(registered)
    elif isinstance(op, OpDefinition):
        op.adopt(registered)  # a redefinition removes it

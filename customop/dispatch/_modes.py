"""Dispatch modes: ``class M(DispatchMode)`` sees every op call made inside ``with M():``.

torch's ``TorchDispatchMode``, built on the dispatcher's ``Python`` key as
DESIGN §3 says: entering a mode pushes it on a stack and includes ``Python``
in every call of the block; a boxed fallback on ``Python`` (installed on each
live dispatcher when a mode is first entered) hands the call to the top
mode's ``__dispatch__``, with that mode popped while it runs. So a mode that
calls ``op(*args, **kwargs)`` reaches the next mode down, and below the last
mode the kernels (Tracer, Fake, Autograd, backends). Calls outside every mode
never see the key: no per-call cost.

NOTE: the stack is a ContextVar, like the local key sets: each thread and
each asyncio task has its own (a task starts with a copy of its creator's).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, Final, final

from typing_extensions import Self

from customop.dispatch._dispatcher import CREATION_HOOKS, LIVE_DISPATCHERS, Dispatcher
from customop.dispatch._extras import Extra, ExtraRecord
from customop.dispatch._guard import RegistryLock
from customop.dispatch._handles import RegistrationHandle
from customop.dispatch._kernel import DEFAULT_SOURCE, caller_source
from customop.dispatch._keys import DispatchKey, DispatchKeySet
from customop.dispatch._local import LocalKeysGuard, include_keys
from customop.dispatch._operator import OperatorHandle
from customop.exceptions import RegistrationError

__all__ = ["DispatchMode", "ModeRule", "active_modes", "register_dispatch_mode"]

#: ``rule(mode, op, types, args, kwargs)``: one op's own behaviour under a mode class.
ModeRule = Callable[..., Any]


@final
class _Frame:
    """One entered mode: the mode, its key guard, and the stack token to restore."""

    __slots__ = ("guard", "mode", "token")

    def __init__(self, mode: DispatchMode, guard: LocalKeysGuard) -> None:
        self.mode = mode
        self.guard = guard
        self.token: Token[tuple[_Frame, ...]] | None = None


_STACK: Final[ContextVar[tuple[_Frame, ...]]] = ContextVar("customop.dispatch.modes", default=())
_BELOW_PYTHON: Final = DispatchKeySet.full().below(DispatchKey.Python)
#: Dispatchers that have the mode fallback (or a user's own Python fallback: None).
_installed: weakref.WeakKeyDictionary[Dispatcher, RegistrationHandle | None] = (
    weakref.WeakKeyDictionary()
)
#: An op's own rules under mode classes: ``(mode class, rule)`` per registration.
MODE_RULES: Final[Extra[tuple[type, ModeRule]]] = Extra(
    "dispatch mode rule",
    owner="customop.dispatch",
    describe=lambda found: f"{found[0].__qualname__}: {getattr(found[1], '__name__', found[1])}",
)


class DispatchMode:
    """Subclass and define ``__dispatch__`` to see (and change) every op call in ``with M():``.

    ``__dispatch__(self, op, types, args, kwargs)`` gets the `OperatorHandle`,
    the types of the array arguments, and the call's arguments; what it
    returns is the call's result. Inside it the mode is popped, so calling
    ``op(*args, **kwargs)`` runs the next mode down, or the kernels. Modes
    nest (the innermost sees a call first) and belong to the current thread
    and asyncio task.
    """

    def __dispatch__(
        self, op: OperatorHandle, types: tuple[type, ...], args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:  # fmt: skip
        """Handle one op call; the default runs it unchanged (``op(*args, **kwargs)``).

        Args:
            op: the operator called (``op.name``, ``op.schema``); calling it runs the
                next mode down, or the kernels.
            types: the types of the array arguments, each once.
            args: the positional arguments of the call.
            kwargs: the keyword arguments of the call.

        Returns:
            The call's result.
        """
        return op(*args, **kwargs)

    def __enter__(self) -> Self:
        with _entered_lock:
            _entered[0] += 1
        _install_everywhere()
        frame = _Frame(self, include_keys(DispatchKey.Python))
        frame.guard.__enter__()
        frame.token = _STACK.set((*_STACK.get(), frame))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack = _STACK.get()
        if not stack or stack[-1].mode is not self or stack[-1].token is None:
            raise RuntimeError(
                f"DispatchMode: {type(self).__qualname__} exits but is not the innermost "
                "active mode. Modes form a stack, so they exit in the reverse order of "
                "entering. Use nested with blocks."
            )
        frame = stack[-1]
        _STACK.reset(frame.token)  # type: ignore[arg-type]  # checked above
        frame.guard.__exit__(exc_type, exc, tb)
        with _entered_lock:
            _entered[0] -= 1


def active_modes() -> tuple[DispatchMode, ...]:
    """The modes active in this thread and task, outermost first.

    Inside a mode's ``__dispatch__`` that mode is popped while it runs,
    so it is not in the result; an empty tuple means calls reach the kernels
    without passing through any mode.

    Returns:
        The active `DispatchMode` instances, the one entered first at index 0 and
        the one that sees a call first at index -1.
    """
    return tuple(frame.mode for frame in _STACK.get())


def _python_fallback(
    op: OperatorHandle, keyset: DispatchKeySet, /, *args: Any, **kwargs: Any
) -> Any:
    """The Python key's fallback: the innermost mode handles the call, popped meanwhile."""
    stack = _STACK.get()
    if not stack:  # every mode popped (inside handlers): run the kernels below
        return op.redispatch(keyset & _BELOW_PYTHON, *args, **kwargs)
    mode = stack[-1].mode
    token = _STACK.set(stack[:-1])
    try:
        types = _array_types(args, kwargs)
        rule = _rule_for(op, type(mode))
        if rule is not None:
            return rule(mode, op, types, args, kwargs)
        return mode.__dispatch__(op, types, args, kwargs)
    finally:
        _STACK.reset(token)


def _array_types(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[type, ...]:
    found: dict[type, None] = {}
    for value in (*args, *kwargs.values()):
        for item in value if isinstance(value, list | tuple) else (value,):
            if hasattr(item, "shape") and hasattr(item, "dtype"):
                found[type(item)] = None
    return tuple(found)


def _rules_of(op: OperatorHandle) -> dict[type, ExtraRecord[tuple[type, ModeRule]]]:
    """The op's live rule of each mode class."""
    return {r.value[0]: r for r in op._entry.extras if r.extra is MODE_RULES}


def _rule_for(op: OperatorHandle, mode_type: type) -> ModeRule | None:
    if not op._entry.extras:
        return None
    rules = _rules_of(op)
    for kind in mode_type.__mro__:
        found = rules.get(kind)
        if found is not None:
            return found.value[1]
    return None


def _install_everywhere() -> None:
    for dispatcher in list(LIVE_DISPATCHERS):
        _install(dispatcher)


def _install(dispatcher: Dispatcher) -> None:
    if dispatcher not in _installed:
        try:
            handle: RegistrationHandle | None = dispatcher._add_fallback(
                DispatchKey.Python, _python_fallback, "customop.DispatchMode", DEFAULT_SOURCE
            )
        except RegistrationError:
            handle = None  # the user's own Python fallback serves the key there
        _installed[dispatcher] = handle


def _install_if_entered(dispatcher: Dispatcher) -> None:
    """A dispatcher made while a mode is active (in any thread) gets the fallback at once:
    calls in that mode include the Python key, which it would otherwise not serve."""
    if _entered[0]:
        _install(dispatcher)


#: How many modes are active now, in every thread (modes entered, not yet exited).
_entered: Final = [0]
_entered_lock: Final = RegistryLock()
CREATION_HOOKS.append(_install_if_entered)


def register_dispatch_mode(op: OperatorHandle, mode: type, fn: ModeRule) -> RegistrationHandle:
    """Give ``op`` its own rule under mode class ``mode`` (and its subclasses).

    ``fn(mode, op, types, args, kwargs)`` runs instead of the mode's
    ``__dispatch__`` for this op (torch: ``register_torch_dispatch``). One rule
    per op and mode class; remove the handle to register another.

    Args:
        op: the operator.
        mode: a `DispatchMode` subclass.
        fn: the rule, called as ``fn(mode, op, types, args, kwargs)``.

    Returns:
        The handle that removes the rule.

    Raises:
        TypeError: ``mode`` is not a DispatchMode subclass, or ``fn`` is not callable.
        RegistrationError: the op already has a rule for ``mode``.
    """
    api = f"{op.name}.register_dispatch_mode"
    if not (isinstance(mode, type) and issubclass(mode, DispatchMode)):
        raise TypeError(
            f"{api}: {mode!r:.80} is not a DispatchMode subclass. A rule applies while a mode "
            "of that class is active. Pass the class, such as MyMode (not an instance)."
        )
    if not callable(fn):
        raise TypeError(
            f"{api}: the rule {fn!r:.80} is not callable. It is called as fn(mode, op, types, "
            "args, kwargs). Pass a function."
        )
    source = caller_source()
    with op.dispatcher.lock:  # the check and the registration are one write
        existing = _rules_of(op).get(mode)
        if existing is not None:
            raise RegistrationError(
                f"{api}: {op.name} already has a rule for {mode.__qualname__}, registered at "
                f"{existing.source} (this one at {source}). One rule per op and mode class "
                "keeps the behaviour unambiguous. Remove the first rule's handle before "
                "registering another."
            )
        record = op.dispatcher._add_extra(op, MODE_RULES, (mode, fn), source)
    description = f"dispatch mode rule {op.name} {mode.__qualname__}"
    return RegistrationHandle(record, description=description, source=source)

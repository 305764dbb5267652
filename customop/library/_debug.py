"""``debug_checks()``: check every op call for undeclared mutation and aliasing.

torch checks these on every call; customop keeps them off the hot path (they
copy every input) and runs them in `opcheck` and inside ``debug_checks()``.
While a block is active, calls in every thread take the slow path (the epoch
clock counts it like an include/exclude block); only calls in the block's own
context are checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

from customop.dispatch import epoch
from customop.dispatch._guard import RegistryLock
from customop.library._aliasing import arrays_in, changed, shares_memory, snapshot
from customop.schema import FunctionSchema

__all__ = ["DebugCheckError", "debug_checks", "debug_state", "run_checked"]


class DebugCheckError(AssertionError):
    """An op call broke its schema: it mutated an input it does not declare, or
    returned an alias of an input from a functional op."""


_enabled: Final[ContextVar[bool]] = ContextVar("customop.debug_checks", default=False)


class _DebugState:
    """Read by every slow-path call: ``active`` is cheap, ``run`` does the work."""

    __slots__ = ("blocks",)

    def __init__(self) -> None:
        self.blocks = 0

    @property
    def active(self) -> bool:
        return self.blocks > 0 and _enabled.get()

    def run(
        self,
        schema: FunctionSchema,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        return run_checked(schema, fn, args, kwargs)


debug_state: Final = _DebugState()
_lock: Final = RegistryLock()


def _argument_values(
    schema: FunctionSchema, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[tuple[str, bool, Any]]:
    values = list(args) + [kwargs[arg.name] for arg in schema.arguments[len(args) :]]
    return [
        (arg.name, arg.is_write, value)
        for arg, value in zip(schema.arguments, values, strict=False)
    ]


def run_checked(
    schema: FunctionSchema, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Call ``fn`` and raise `DebugCheckError` if it broke the schema's promises."""
    inputs = _argument_values(schema, args, kwargs)
    before = {name: snapshot(value) for name, writes, value in inputs if not writes}
    result = fn(*args, **kwargs)
    for name, writes, value in inputs:
        if not writes and changed(before[name], value):
            raise DebugCheckError(
                f"{schema.name}: argument {name!r} was mutated, but the schema does not "
                f"declare it. Callers and tracing assume unannotated inputs are unchanged. "
                f"Annotate it as written, e.g. Tensor(a!) {name} (mutates_args=[{name!r}]), "
                f"or copy it in the kernel."
            )
    if not schema.is_mutable and not any(r.alias_info for r in schema.returns):
        for out in arrays_in(result):
            for name, _, value in inputs:
                if any(shares_memory(out, array) for array in arrays_in(value)):
                    raise DebugCheckError(
                        f"{schema.name}: an output aliases input {name!r}, but the op is "
                        "functional. Callers may mutate outputs, which would change the "
                        "input. Return a copy (e.g. x.copy()), or declare the alias in the schema."
                    )
    return result


@contextmanager
def debug_checks() -> Iterator[None]:
    """Check every op call in this context for undeclared mutation and output aliasing.

    Returns:
        A context manager; a failed check raises `DebugCheckError` at the call.
    """
    token = _enabled.set(True)
    with _lock:
        debug_state.blocks += 1
    epoch._local_block(+1)
    try:
        yield
    finally:
        epoch._local_block(-1)
        with _lock:
            debug_state.blocks -= 1
        _enabled.reset(token)

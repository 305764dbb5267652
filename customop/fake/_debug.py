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
from typing import Any

from customop.exceptions import DebugCheckError
from customop.fake._aliasing import arrays_in, changed, shares_memory, snapshot
from customop.ops import debug_state
from customop.schema import FunctionSchema

__all__ = ["DebugCheckError", "debug_checks", "run_checked"]


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
                f"declare it (Argument {name} is not defined as mutable but was mutated). "
                "Callers and tracing assume unannotated inputs are unchanged. Annotate it as "
                f"written, e.g. Tensor(a!) {name} (mutates_args=[{name!r}]), or copy it in "
                "the kernel."
            )
    if not schema.is_mutable and not any(r.alias_info for r in schema.returns):
        for out in arrays_in(result):
            for name, _, value in inputs:
                if any(shares_memory(out, array) for array in arrays_in(value)):
                    raise DebugCheckError(
                        f"{schema.name}: an output aliases input {name!r}, but the op is "
                        f"functional (Argument {name} is not defined to alias output but was "
                        "aliasing). Callers may mutate outputs, which would change the input. "
                        "Return a copy (e.g. x.copy()), or declare the alias in the schema."
                    )
    return result


@contextmanager
def debug_checks() -> Iterator[None]:
    """Check every op call in this context for undeclared mutation and output aliasing.

    Returns:
        A context manager; a failed check raises `DebugCheckError` at the call.
    """
    token = debug_state.enter(run_checked)
    try:
        yield
    finally:
        debug_state.exit(token)

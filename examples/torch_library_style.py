"""A Library in the TORCH_LIBRARY style, with a boxed fallback that logs every op call.

    python examples/torch_library_style.py

PyTorch's C++ registers operators in blocks::

    TORCH_LIBRARY(vec, m) { m.def("add(Tensor x, Tensor y, *, Scalar alpha=1) -> Tensor"); }
    TORCH_LIBRARY_IMPL(vec, CPU, m) { m.impl("add", add_cpu); }
    TORCH_LIBRARY_IMPL(_, Python, m) { m.fallback(log_call); }

`customop.library`, `library_impl` and `library_fragment` are the same blocks
as decorators: each creates a `Library`, calls the decorated function with it,
and returns it, so the module-level name keeps the library (and its ops)
alive. The kernels are numpy functions.

The fallback is registered on the `Python` dispatch key, which sits above
every backend and autograd key. No array carries it, so it runs only for the
calls inside an ``include_keys(DispatchKey.Python)`` block: there, every op
call reaches the fallback first, which logs it and redispatches to the keys
below its own, where the op's kernel runs. The calls that a composite op's
kernel makes to other ops go through the dispatcher too, so they are logged,
indented under their caller.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from customop import (
    Dispatcher,
    DispatchKey,
    DispatchKeySet,
    Library,
    OperatorHandle,
    include_keys,
    library,
    library_fragment,
    library_impl,
)
from customop.library import Ops

Array = npt.NDArray[Any]

# A fallback serves every operator of its dispatcher, whoever defined them. This
# example has a dispatcher of its own so that its logging fallback touches no one
# else's ops. A library module would use the process-wide one: drop `dispatcher=`
# below and call its ops as `customop.ops.vec.<name>`.
DISPATCHER = Dispatcher()
ops = Ops(DISPATCHER)


# TORCH_LIBRARY(vec, m): the namespace's definitions, in one place.
@library("vec", dispatcher=DISPATCHER)
def vec(m: Library) -> None:
    m.define("add(Tensor x, Tensor y, *, Scalar alpha=1) -> Tensor")
    m.define("matmul(Tensor x, Tensor w) -> Tensor")
    m.define("relu(Tensor x) -> Tensor")
    m.define("sum(Tensor x, int? dim=None) -> Tensor")


def add_cpu(x: Array, y: Array, *, alpha: complex = 1) -> Array:
    return np.asarray(x + alpha * y)


def matmul_cpu(x: Array, w: Array) -> Array:
    return np.asarray(x @ w)


def relu_cpu(x: Array) -> Array:
    return np.maximum(x, 0)


def sum_cpu(x: Array, dim: int | None = None) -> Array:
    return np.asarray(x.sum(axis=dim))


# TORCH_LIBRARY_IMPL(vec, CPU, m): numpy kernels for the CPU key.
@library_impl("vec", "CPU", dispatcher=DISPATCHER)
def vec_cpu(m: Library) -> None:
    m.impl("add", add_cpu)
    m.impl("matmul", matmul_cpu)
    m.impl("relu", relu_cpu)
    m.impl("sum", sum_cpu)


def linear(x: Array, w: Array, b: Array) -> Array:
    """A decomposition into other ops: it runs on any backend those ops support."""
    return np.asarray(ops.vec.add(ops.vec.matmul(x, w), b))


def mlp(x: Array, w1: Array, b1: Array, w2: Array, b2: Array) -> Array:
    hidden = ops.vec.relu(ops.vec.linear(x, w1, b1))
    return np.asarray(ops.vec.linear(hidden, w2, b2))


# TORCH_LIBRARY_FRAGMENT(vec, m): more definitions for the namespace, here with
# CompositeImplicitAutograd kernels (no key given: the catch-all).
@library_fragment("vec", dispatcher=DISPATCHER)
def vec_composite(m: Library) -> None:
    m.define("linear(Tensor x, Tensor w, Tensor b) -> Tensor")
    m.define("mlp(Tensor x, Tensor w1, Tensor b1, Tensor w2, Tensor b2) -> Tensor")
    m.impl("linear", linear)
    m.impl("mlp", mlp)


def describe(value: object) -> str:
    """``f64[4, 3]`` for an array, the repr of anything else."""
    if isinstance(value, np.ndarray):
        return f"{value.dtype.kind}{value.dtype.itemsize * 8}[{', '.join(map(str, value.shape))}]"
    return repr(value)


class CallLog:
    """What the fallback saw: one line per op call, indented by nesting depth."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0


LOG = CallLog()


def log_call(op: OperatorHandle, keyset: DispatchKeySet, *args: object, **kwargs: object) -> object:
    """A boxed fallback: called with the op, the call's dispatch keys, then the op's arguments."""
    shown = [describe(a) for a in args] + [f"{k}={describe(v)}" for k, v in kwargs.items()]
    LOG.lines.append(f"{'  ' * LOG.depth}{op.name}({', '.join(shown)})")
    LOG.depth += 1
    try:
        # Hand the call on to the keys below Python, where the op's own kernel runs.
        return op.redispatch(keyset.below(DispatchKey.Python), *args, **kwargs)
    finally:
        LOG.depth -= 1


# TORCH_LIBRARY_IMPL(_, Python, m): a fallback for every operator at one key.
@library_impl("_", "Python", dispatcher=DISPATCHER)
def logging_fallback(m: Library) -> None:
    m.fallback(log_call)


@contextmanager
def logging_calls() -> Iterator[list[str]]:
    """Log the op calls of the block (the list is filled when the block ends)."""
    start = len(LOG.lines)
    found: list[str] = []
    with include_keys(DispatchKey.Python):
        yield found
    found.extend(LOG.lines[start:])


def main() -> None:
    x = np.arange(8.0).reshape(4, 2) - 3
    w1, b1 = np.ones((2, 3)), np.full(3, 0.5)
    w2, b2 = np.ones((3, 1)), np.zeros(1)

    print("libraries:")
    for lib in (vec, vec_cpu, vec_composite, logging_fallback):
        print(f"  {lib}")
    print("\ndispatch table of vec::mlp (keys with a kernel):")
    print(DISPATCHER.dump_table("vec::mlp", kernels_only=True), end="")

    with logging_calls() as calls:
        y = ops.vec.mlp(x, w1, b1, w2, b2)
        total = ops.vec.sum(y)
        scaled = ops.vec.add(y, y, alpha=0.5)
    print(f"\nop calls logged by the fallback ({len(calls)}):")
    for line in calls:
        print(f"  {line}")

    expected = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    assert np.array_equal(y, expected) and float(total) == expected.sum()
    assert np.array_equal(scaled, 1.5 * expected)
    print(f"\nmlp(x) = {y.ravel().tolist()}, sum = {float(total)}: matches numpy")

    before = len(LOG.lines)
    ops.vec.relu(x)
    print(f"outside the block: {len(LOG.lines) - before} calls logged")

    for lib in (logging_fallback, vec_composite, vec_cpu, vec):
        lib.close()
    print(f"after close(): namespaces {ops.namespaces()}")


if __name__ == "__main__":
    main()

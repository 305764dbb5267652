"""Ops with rules under vmap: each against a numpy reference, its own loop fallback, and grad.

One `Case` per op (see ``ops.py``): a function of the op on one example, its
numpy reference, the example shapes of its array arguments, several
``in_dims`` patterns, and a scalar loss made of ops for the gradient checks
(``vmap(grad(loss))`` and ``grad`` of a vmapped loss, against per-example
``grad``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import customop
from customop import VmapFallbackWarning
from customop.autograd import grad
from customop.dispatch import Dispatcher
from customop.vmap import rule_of
from tests.vmap.ops import define

BATCH = 3


@dataclass(frozen=True)
class Case:
    """One op under test."""

    op: str  # the op whose rule is tested (removed for the loop comparison)
    fn: Callable[[SimpleNamespace], Callable[..., Any]]
    ref: Callable[..., Any]
    shapes: tuple[tuple[int, ...], ...]
    in_dims: tuple[tuple[int | None, ...], ...]
    loss: Callable[[SimpleNamespace], Callable[..., Any]] | None = None


def _ln(x: Any, w: Any = None, b: Any = None, eps: float = 1e-5) -> Any:
    out = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    out = out if w is None else out * w
    return out if b is None else out + b


def _softmax(x: Any, dim: int) -> Any:
    e = np.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def _total(o: SimpleNamespace, fn: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *args: o.total(fn(*args))


CASES = {
    "elementwise": Case(
        "sin", lambda o: o.sin, np.sin, ((3, 4),), ((0,), (1,), (-1,), (2,)),
        lambda o: _total(o, o.sin),
    ),
    "reduction-over-dim": Case(
        "sum_dim", lambda o: lambda x: o.sum_dim(x, -2), lambda x: x.sum(-2), ((3, 4),),
        ((0,), (2,), (-2,)), lambda o: lambda x: o.total(o.sum_dim(x, -2)),
    ),
    "total": Case(
        "total", lambda o: o.total, lambda x: np.asarray(x.sum()), ((3, 4),), ((0,), (1,)),
        lambda o: o.total,
    ),
    "matmul": Case(
        "matmul", lambda o: o.matmul, np.matmul, ((2, 3), (3, 4)),
        ((0, 0), (1, None), (None, 2), (-1, 0)), lambda o: _total(o, o.matmul),
    ),
    "layer-norm": Case(
        "layer_norm", lambda o: lambda x, w, b: o.layer_norm(x, w, b, 1e-5), _ln,
        ((3, 5), (5,), (5,)), ((0, None, None), (1, 0, None), (None, 0, 0), (2, None, 0)),
        lambda o: lambda x, w, b: o.total(o.sin(o.layer_norm(x, w, b, 1e-5))),
    ),
    "layer-norm-without-weight": Case(
        "layer_norm", lambda o: lambda x: o.layer_norm(x, None, None, 1e-5), _ln, ((3, 5),),
        ((0,), (2,)), lambda o: lambda x: o.total(o.sin(o.layer_norm(x, None, None, 1e-5))),
    ),
    "softmax": Case(
        "softmax", lambda o: lambda x: o.softmax(x, -1), lambda x: _softmax(x, -1), ((3, 4),),
        ((0,), (1,), (2,)), lambda o: lambda x: o.total(o.sin(o.softmax(x, -1))),
    ),
    "int-argument": Case(
        "shift", lambda o: lambda x: o.shift(x, 2), lambda x: np.roll(x, 2, axis=-1),
        ((3, 5),), ((0,), (2,), (-1,)), lambda o: lambda x: o.total(o.sin(o.shift(x, 2))),
    ),
    "two-outputs": Case(
        "minmax", lambda o: o.minmax, lambda x: (x.min(-1), x.max(-1)), ((3, 4),),
        ((0,), (2,)), lambda o: lambda x: o.total(o.sum_list(list(o.minmax(x)))),
    ),
    "tensor-list": Case(
        "sum_list", lambda o: lambda a, b, c: o.sum_list([a, b, c]),
        lambda a, b, c: a + b + c, ((3, 4), (3, 4), (3, 4)),
        ((0, 0, 0), (0, None, 1), (None, 2, None)),
        lambda o: lambda a, b, c: o.total(o.sin(o.sum_list([a, b, c]))),
    ),
    "tensor-list-output": Case(
        "split_last", lambda o: lambda x: o.split_last(x, 2),
        lambda x: np.split(x, 2, axis=-1), ((3, 4),), ((0,), (2,)),
    ),
    "moveaxis": Case(
        "moveaxis", lambda o: lambda x: o.moveaxis(x, 0, -1),
        lambda x: np.moveaxis(x, 0, -1), ((2, 3, 4),), ((0,), (3,), (1,)),
        lambda o: lambda x: o.total(o.sin(o.moveaxis(x, 0, -1))),
    ),
}  # fmt: skip


def _batched(rng: np.random.Generator, case: Case, dims: tuple[int | None, ...]) -> list[Any]:
    """Arguments with a batch of BATCH inserted at each in_dim (unbatched where None)."""
    args = []
    for shape, dim in zip(case.shapes, dims, strict=True):
        if dim is None:
            args.append(rng.standard_normal(shape))
        else:
            full = list(shape)
            full.insert(dim % (len(shape) + 1), BATCH)
            args.append(rng.standard_normal(full))
    return args


def _example(args: list[Any], dims: tuple[int | None, ...], i: int) -> list[Any]:
    return [a if d is None else np.take(a, i, axis=d) for a, d in zip(args, dims, strict=True)]


def _stack(outputs: list[Any]) -> Any:
    first = outputs[0]
    if isinstance(first, tuple | list):
        return type(first)(_stack([out[i] for out in outputs]) for i in range(len(first)))
    return np.stack(outputs)


def _close(got: Any, expected: Any) -> None:
    if isinstance(expected, tuple | list):
        assert type(got) is type(expected) and len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            _close(g, e)
        return
    assert isinstance(got, np.ndarray), type(got)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


PATTERNS = [
    pytest.param(name, dims, id=f"{name}-{'-'.join(map(str, dims))}")
    for name, case in CASES.items()
    for dims in case.in_dims
]


@pytest.fixture
def ops(dispatcher: Dispatcher) -> SimpleNamespace:
    return define(dispatcher)


@pytest.mark.parametrize(("name", "dims"), PATTERNS)
def test_the_rule_matches_the_reference_and_the_loop_fallback(
    dispatcher: Dispatcher, ops: SimpleNamespace, name: str, dims: tuple[int | None, ...]
) -> None:
    case = CASES[name]
    args = _batched(np.random.default_rng(1), case, dims)
    fn = case.fn(ops)
    expected = _stack([case.ref(*_example(args, dims, i)) for i in range(BATCH)])
    batched = customop.vmap(fn, in_dims=dims, dispatcher=dispatcher)
    _close(batched(*args), expected)
    rule = rule_of(getattr(ops, case.op))
    assert rule is not None
    customop.handle_of(rule.fn).remove()
    with pytest.warns(VmapFallbackWarning, match=f"vt::{case.op} has no vmap rule"):
        looped = batched(*args)
    _close(looped, expected)


GRAD_PATTERNS = [p for p in PATTERNS if CASES[p.values[0]].loss is not None]  # type: ignore[index]


@pytest.mark.parametrize(("name", "dims"), GRAD_PATTERNS)
def test_per_example_gradients_match_grad_per_example(
    dispatcher: Dispatcher, ops: SimpleNamespace, name: str, dims: tuple[int | None, ...]
) -> None:
    case = CASES[name]
    assert case.loss is not None
    loss = case.loss(ops)
    args = _batched(np.random.default_rng(2), case, dims)
    per_example = grad(loss, dispatcher=dispatcher)
    expected = np.stack([per_example(*_example(args, dims, i)) for i in range(BATCH)])
    got = customop.vmap(per_example, in_dims=dims, dispatcher=dispatcher)(*args)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("name", "dims"), GRAD_PATTERNS)
def test_grad_of_a_vmapped_loss_is_the_per_example_gradients(
    dispatcher: Dispatcher, ops: SimpleNamespace, name: str, dims: tuple[int | None, ...]
) -> None:
    case = CASES[name]
    assert case.loss is not None
    loss = case.loss(ops)
    args = _batched(np.random.default_rng(3), case, dims)
    per_example = grad(loss, dispatcher=dispatcher)
    grads = [per_example(*_example(args, dims, i)) for i in range(BATCH)]
    # d/dx of the batch's summed loss: each example's gradient, where x holds it.
    expected = sum(grads) if dims[0] is None else np.stack(grads, axis=dims[0] % args[0].ndim)
    batched = customop.vmap(loss, in_dims=dims, dispatcher=dispatcher)
    got = grad(lambda *a: ops.total(batched(*a)), dispatcher=dispatcher)(*args)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.loss is not None])
def test_the_formulas_under_test_are_right(
    dispatcher: Dispatcher, ops: SimpleNamespace, name: str
) -> None:
    """The per-example gradients above are only as good as the formulas: check them."""
    case = CASES[name]
    assert case.loss is not None
    args = [np.random.default_rng(4).standard_normal(shape) for shape in case.shapes]
    assert customop.gradcheck(case.loss(ops), args, dispatcher=dispatcher)


@settings(max_examples=25, deadline=None)
@given(
    a_dim=st.one_of(st.none(), st.integers(-3, 2)),
    b_dim=st.one_of(st.none(), st.integers(-3, 2)),
    out_dim=st.integers(-3, 2),
    batch=st.integers(1, 4),
)
def test_matmul_under_any_in_dims_and_out_dims(
    a_dim: int | None, b_dim: int | None, out_dim: int, batch: int
) -> None:
    d = Dispatcher()
    customop.tensor.install_backends(d)
    o = define(d)
    rng = np.random.default_rng(5)
    if a_dim is None and b_dim is None:
        a_dim = 0
    a = rng.standard_normal(_with(batch, (2, 3), a_dim))
    b = rng.standard_normal(_with(batch, (3, 4), b_dim))
    got = customop.vmap(o.matmul, in_dims=(a_dim, b_dim), out_dims=out_dim, dispatcher=d)(a, b)
    rows = [
        np.take(a, i, axis=a_dim) if a_dim is not None else a for i in range(batch)
    ]  # fmt: skip
    cols = [np.take(b, i, axis=b_dim) if b_dim is not None else b for i in range(batch)]
    expected = np.stack([r @ c for r, c in zip(rows, cols, strict=True)], axis=out_dim)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def _with(batch: int, shape: tuple[int, ...], dim: int | None) -> tuple[int, ...]:
    if dim is None:
        return shape
    full = list(shape)
    full.insert(dim % (len(shape) + 1), batch)
    return tuple(full)


def test_a_mutating_op_with_a_faithful_rule_writes_every_example(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    x = np.arange(6.0).reshape(3, 2)
    seen = []

    def f(row: Any) -> Any:
        ops.scale_(row, 10.0)
        seen.append(row)
        return row

    out = customop.vmap(f, in_dims=1, out_dims=1, dispatcher=dispatcher)(x)
    np.testing.assert_array_equal(x, np.arange(6.0).reshape(3, 2) * 10)
    np.testing.assert_array_equal(out, x)

"""The ops of tests/jax/ops.py under JAX: eager, jit, grad, check_grads, vmap and their mixes.

Each case calls one customop op on JAX arrays and compares it with the same
math written in plain ``jax.numpy`` (the ``xp=jnp`` kernel called directly,
which JAX differentiates and batches by itself). Gradients come from the ops'
``register_autograd`` formulas (backwards that are ops too); ``check_grads``
compares them with finite differences in float64. None of these ops has a
vmap rule, so vmap maps each op sequentially (and says so once per op).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from tests.jax import ops as kernels

B = 3  # batch size for vmap


@dataclass(frozen=True)
class Case:
    """One op call: customop's, the pure-jnp reference, inputs, what to differentiate."""

    name: str
    call: Callable[..., Any]  # call(ops, *inputs)
    ref: Callable[..., Any]  # ref(*inputs), plain jax.numpy
    inputs: Callable[[np.random.Generator], tuple[Any, ...]]
    argnums: tuple[int, ...] = (0,)
    in_axes: tuple[Any, ...] = (0,)
    extra: dict[str, Any] = field(default_factory=dict)


def _normal(*shape: int) -> Callable[[np.random.Generator], Any]:
    return lambda rng: rng.standard_normal(shape).astype(np.float32)


def _inputs(*makers: Callable[[np.random.Generator], Any]) -> Callable[..., tuple[Any, ...]]:
    return lambda rng: tuple(make(rng) for make in makers)


def _rope(rng: np.random.Generator) -> tuple[Any, ...]:
    """x (seq 4, dim 8) and LLaMA's cos/sin tables (both halves alike)."""
    angles = np.outer(np.arange(4), 1.0 / 10000 ** (np.arange(4) / 4)).astype(np.float32)
    angles = np.concatenate([angles, angles], axis=-1)
    return rng.standard_normal((4, 8)).astype(np.float32), np.cos(angles), np.sin(angles)


def _logits_and_target(rng: np.random.Generator) -> tuple[Any, ...]:
    return rng.standard_normal((5, 7)).astype(np.float32), rng.integers(0, 7, 5).astype(np.int32)


J = jnp
SCALE = 1 / math.sqrt(8)
CASES = [
    Case(
        "layer_norm",
        lambda o, x, w, b: o.layer_norm(x, w, b, 1e-5),
        lambda x, w, b: kernels.layer_norm(J, x, w, b, 1e-5),
        _inputs(_normal(4, 8), _normal(8), _normal(8)),
        argnums=(0, 1, 2),
        in_axes=((0, None, None), (1, 0, None), (0, 0, 0)),
    ),
    Case(
        "layer_norm_without_bias",
        lambda o, x, w: o.layer_norm(x, w, None, 1e-5),
        lambda x, w: kernels.layer_norm(J, x, w, None, 1e-5),
        _inputs(_normal(4, 8), _normal(8)),
        argnums=(0, 1),
        in_axes=((0, None), (1, 0)),
    ),
    Case(
        "rms_norm",
        lambda o, x, w: o.rms_norm(x, w, 1e-6),
        lambda x, w: kernels.rms_norm(J, x, w, 1e-6),
        _inputs(_normal(4, 8), _normal(8)),
        argnums=(0, 1),
        in_axes=((0, None), (1, 0)),
    ),
    Case(
        "softmax_last",
        lambda o, x: o.softmax(x, -1),
        lambda x: kernels.softmax(J, x, -1),
        _inputs(_normal(4, 8)),
        in_axes=(0, 1),
    ),
    Case(
        "softmax_first",
        lambda o, x: o.softmax(x, 0),
        lambda x: kernels.softmax(J, x, 0),
        _inputs(_normal(4, 8)),
        in_axes=(0, 1),
    ),
    Case(
        "attention",
        lambda o, q, k, v: o.attention(q, k, v, SCALE, False),
        lambda q, k, v: kernels.attention(J, q, k, v, SCALE, False),
        _inputs(_normal(2, 4, 8), _normal(2, 6, 8), _normal(2, 6, 8)),
        argnums=(0, 1, 2),
        in_axes=((0, 0, 0), (1, None, None)),
    ),
    Case(
        "attention_causal",
        lambda o, q, k, v: o.attention(q, k, v, SCALE, True),
        lambda q, k, v: kernels.attention(J, q, k, v, SCALE, True),
        _inputs(_normal(2, 5, 8), _normal(2, 5, 8), _normal(2, 5, 8)),
        argnums=(0, 1, 2),
        in_axes=((0, 0, 0), (None, 2, 2)),
    ),
    Case(
        "rotary",
        lambda o, x, cos, sin: o.rotary(x, cos, sin, False),
        lambda x, cos, sin: kernels.rotary(J, x, cos, sin, False),
        _rope,
        in_axes=((0, None, None), (1, None, None)),
    ),
    Case(
        "gelu",
        lambda o, x: o.gelu(x, approximate="none"),
        lambda x: kernels.gelu(J, x, "none"),
        _inputs(_normal(4, 8)),
        in_axes=(0, 1),
    ),
    Case(
        "gelu_tanh",
        lambda o, x: o.gelu(x, approximate="tanh"),
        lambda x: kernels.gelu(J, x, "tanh"),
        _inputs(_normal(4, 8)),
        in_axes=(1,),
    ),
    Case(
        "sum_dim",
        lambda o, x: o.sum_dim(x, 1, False),
        lambda x: x.sum(1),
        _inputs(_normal(4, 8)),
        in_axes=(0, 1),
    ),
    Case(
        "sum_dim_keepdim",
        lambda o, x: o.sum_dim(x, 0, True),
        lambda x: x.sum(0, keepdims=True),
        _inputs(_normal(4, 8)),
        in_axes=(1,),
    ),
    Case(
        "max_dim",
        lambda o, x: o.max_dim(x, 1),
        lambda x: (x.max(1), x.argmax(1)),
        _inputs(_normal(4, 8)),
        in_axes=(0, 1),
    ),
    Case(
        "concat",
        lambda o, a, b: o.concat([a, b], 0),
        lambda a, b: jnp.concatenate([a, b], 0),
        _inputs(_normal(2, 8), _normal(3, 8)),
        argnums=(0, 1),
        in_axes=((0, 0), (0, None), (1, 1)),
    ),
    Case(
        "cumsum_numpy_kernel",
        lambda o, x: o.cumsum(x, 1),
        lambda x: jnp.cumsum(x, 1),
        _inputs(_normal(4, 8)),
        in_axes=(0, 1),
    ),
    Case(
        "swiglu",
        lambda o, x, gate: o.swiglu(x, gate),
        lambda x, gate: kernels.swiglu(J, x, gate),
        _inputs(_normal(4, 8), _normal(4, 8)),
        argnums=(0, 1),
        in_axes=((0, 0), (0, None), (1, 1)),
    ),
    Case(
        "cross_entropy_mean",
        lambda o, logits, target: o.cross_entropy(logits, target, "mean"),
        lambda logits, target: kernels.cross_entropy(J, logits, target, "mean"),
        _logits_and_target,
        in_axes=((0, 0), (0, None)),
    ),
    Case(
        "cross_entropy_sum",
        lambda o, logits, target: o.cross_entropy(logits, target, "sum"),
        lambda logits, target: kernels.cross_entropy(J, logits, target, "sum"),
        _logits_and_target,
        in_axes=((1, None),),
    ),
]
IDS = [case.name for case in CASES]


def _loss(out: Any) -> Any:
    """A scalar that weighs every float output differently (so every cotangent differs)."""
    total = jnp.zeros(())
    for leaf in jax.tree_util.tree_leaves(out):
        if jnp.issubdtype(leaf.dtype, jnp.inexact):
            weights = jnp.sin(jnp.arange(leaf.size, dtype=leaf.dtype).reshape(leaf.shape) + 1)
            total = total + jnp.sum(leaf * weights)
    return total


def _close(actual: Any, expected: Any, tol: float = 1e-5) -> None:
    jax.tree_util.tree_map(
        lambda a, e: np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=tol, atol=tol),
        actual,
        expected,
    )


def _arrays(case: Case, dtype: Any = np.float32) -> tuple[Any, ...]:
    made = case.inputs(np.random.default_rng(0))
    return tuple(
        jnp.asarray(a.astype(dtype) if np.issubdtype(a.dtype, np.floating) else a) for a in made
    )


def _batched(case: Case, inputs: tuple[Any, ...], axes: Any) -> tuple[Any, ...]:
    """``inputs`` with a batch of ``B`` different values along each mapped axis."""
    rng = np.random.default_rng(1)
    per_input = axes if isinstance(axes, tuple) else (axes,) * len(inputs)
    found = []
    for value, axis in zip(inputs, per_input, strict=True):
        if axis is None:
            found.append(value)
            continue
        if jnp.issubdtype(value.dtype, jnp.integer):
            stack = [rng.integers(0, int(value.max()) + 1, value.shape) for _ in range(B)]
        else:
            stack = [rng.standard_normal(value.shape) for _ in range(B)]
        found.append(jnp.stack([jnp.asarray(s, value.dtype) for s in stack], axis))
    return tuple(found)


def _grad_of(case: Case, fn: Callable[..., Any]) -> Callable[..., Any]:
    return jax.grad(lambda *args: _loss(fn(*args)), argnums=case.argnums)


def _x64() -> Any:
    """64-bit types for one block only (``jax.enable_x64`` from JAX 0.6 on, else experimental)."""
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    from jax.experimental import enable_x64

    return enable_x64()


@contextmanager
def _sequential_maps() -> Iterator[None]:
    """The ops have no vmap rules: vmap maps them sequentially, each op warning once."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    assert caught, "vmap of an op without a rule warns"
    for warning in caught:
        assert warning.category is RuntimeWarning
        assert "register_vmap" in str(warning.message), warning.message


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_eager(ops: SimpleNamespace, case: Case) -> None:
    inputs = _arrays(case)
    _close(case.call(ops, *inputs), jax.jit(case.ref)(*inputs))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_jit(ops: SimpleNamespace, case: Case) -> None:
    inputs = _arrays(case)
    _close(jax.jit(lambda *a: case.call(ops, *a))(*inputs), jax.jit(case.ref)(*inputs))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_grad_matches_jax_autodiff_of_the_jnp_reference(ops: SimpleNamespace, case: Case) -> None:
    inputs = _arrays(case)
    ours = _grad_of(case, lambda *a: case.call(ops, *a))
    theirs = jax.jit(_grad_of(case, case.ref))  # the reference compiled: eager JAX is slow
    _close(ours(*inputs), theirs(*inputs), 1e-4)
    _close(jax.jit(ours)(*inputs), theirs(*inputs), 1e-4)
    value, grads = jax.value_and_grad(lambda *a: _loss(case.call(ops, *a)), argnums=case.argnums)(
        *inputs
    )
    _close(
        (value, grads), (jax.jit(lambda *a: _loss(case.ref(*a)))(*inputs), theirs(*inputs)), 1e-4
    )


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vjp_of_every_output(ops: SimpleNamespace, case: Case) -> None:
    inputs = _arrays(case)
    out, pullback = jax.vjp(lambda *a: case.call(ops, *a), *inputs)
    ref_out, ref_pullback = jax.vjp(jax.jit(case.ref), *inputs)
    cotangent = jax.tree_util.tree_map(
        lambda o: (
            jnp.cos(jnp.arange(o.size).reshape(o.shape)).astype(o.dtype)
            if jnp.issubdtype(o.dtype, jnp.inexact)
            else np.zeros(o.shape, jax.dtypes.float0)
        ),
        ref_out,
    )
    _close(out, ref_out)
    wanted = set(case.argnums)
    got = [g for i, g in enumerate(pullback(cotangent)) if i in wanted]
    expected = [g for i, g in enumerate(ref_pullback(cotangent)) if i in wanted]
    _close(got, expected, 1e-4)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_check_grads_in_float64(ops: SimpleNamespace, case: Case) -> None:
    with _x64():
        inputs = _arrays(case, np.float64)
        fixed = list(inputs)

        def f(*diff: Any) -> Any:
            args = list(fixed)
            for index, value in zip(case.argnums, diff, strict=True):
                args[index] = value
            return _loss(case.call(ops, *args))

        # jit: one compile instead of an eager run per finite difference.
        check_grads(jax.jit(f), tuple(inputs[i] for i in case.argnums), order=1, modes=["rev"])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vmap_over_each_in_axes(ops: SimpleNamespace, case: Case) -> None:
    inputs = _arrays(case)
    with _sequential_maps():
        for axes in case.in_axes:
            batch = _batched(case, inputs, axes)
            ours = jax.vmap(lambda *a: case.call(ops, *a), in_axes=axes)(*batch)
            _close(ours, jax.jit(jax.vmap(case.ref, in_axes=axes))(*batch))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vmap_of_grad(ops: SimpleNamespace, case: Case) -> None:
    inputs = _arrays(case)
    ours = _grad_of(case, lambda *a: case.call(ops, *a))
    theirs = _grad_of(case, case.ref)
    with _sequential_maps():
        for axes in case.in_axes:
            batch = _batched(case, inputs, axes)
            expected = jax.jit(jax.vmap(theirs, axes))(*batch)
            _close(jax.vmap(ours, axes)(*batch), expected, 1e-4)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_jit_of_vmap_of_grad(ops: SimpleNamespace, case: Case) -> None:
    inputs = _arrays(case)
    ours = _grad_of(case, lambda *a: case.call(ops, *a))
    theirs = _grad_of(case, case.ref)
    with _sequential_maps():
        for axes in case.in_axes:
            batch = _batched(case, inputs, axes)
            got = jax.jit(jax.vmap(ours, axes))(*batch)
            _close(got, jax.jit(jax.vmap(theirs, axes))(*batch), 1e-4)


SECOND_ORDER = {
    # op: a scalar function whose gradient's gradient goes through the op's backward ops
    "rotary": lambda o, x, cos, sin: jnp.sum(o.rotary(x, cos, sin, False) ** 3),
    "sum_dim": lambda o, x: jnp.sum(o.sum_dim(x * x, 1, False) ** 2),
    "cumsum_numpy_kernel": lambda o, x: jnp.sum(jnp.sin(o.cumsum(x, 1))),
    "concat": lambda o, a, b: jnp.sum(o.concat([a, b], 0) ** 3),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_grad_of_grad_where_the_backward_ops_have_formulas(ops: SimpleNamespace, name: str) -> None:
    case = next(c for c in CASES if c.name == name)
    inputs = _arrays(case)

    def reference(*a: Any) -> Any:
        return SECOND_ORDER[name](SimpleNamespace(**REFERENCE_OPS), *a)

    def hessian_vector(fn: Callable[..., Any]) -> Callable[..., Any]:
        inner = jax.grad(fn)
        return jax.grad(lambda *a: jnp.sum(inner(*a) * jnp.cos(a[0])))

    ours = hessian_vector(lambda *a: SECOND_ORDER[name](ops, *a))
    expected = jax.jit(hessian_vector(reference))(*inputs)
    _close(ours(*inputs), expected, 1e-4)
    _close(jax.jit(ours)(*inputs), expected, 1e-4)


REFERENCE_OPS: dict[str, Callable[..., Any]] = {
    "rotary": lambda x, cos, sin, inverse: kernels.rotary(J, x, cos, sin, inverse),
    "sum_dim": lambda x, dim, keepdim: x.sum(dim, keepdims=keepdim),
    "cumsum": lambda x, dim: jnp.cumsum(x, dim),
    "concat": lambda xs, dim: jnp.concatenate(xs, dim),
}

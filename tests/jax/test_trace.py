"""customop.trace on JAX arrays records a Graph; a Graph runs on JAX arrays, under jit and grad."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np

import customop
from customop import Dispatcher
from tests.jax import ops as kernels


def _block(ops: SimpleNamespace, x: jax.Array, w: jax.Array) -> jax.Array:
    """An MLP-ish block: rms_norm, then a gated activation of itself."""
    h = ops.rms_norm(x, w, 1e-6)
    return ops.swiglu(h, ops.gelu(h, approximate="tanh"))


def _reference(x: jax.Array, w: jax.Array) -> jax.Array:
    h = kernels.rms_norm(jnp, x, w, 1e-6)
    return kernels.swiglu(jnp, h, kernels.gelu(jnp, h, "tanh"))


def test_trace_of_jax_arrays_records_a_graph(dispatcher: Dispatcher, ops: SimpleNamespace) -> None:
    x, w = jnp.ones((4, 8)), jnp.ones(8)
    graph = customop.trace(lambda x, w: _block(ops, x, w), x, w, dispatcher=dispatcher)
    assert str(graph) == (
        "def forward(x: f32[4, 8]@jax, w: f32[8]@jax):\n"
        "    rms_norm = ops.jt.rms_norm.default(x, w, 1e-06)           # f32[4, 8]@jax\n"
        "    gelu = ops.jt.gelu.default(rms_norm, approximate='tanh')  # f32[4, 8]@jax\n"
        "    swiglu = ops.jt.swiglu.default(rms_norm, gelu)            # f32[4, 8]@jax\n"
        "    return swiglu"
    )


def test_a_graph_runs_on_jax_arrays_eagerly_under_jit_and_grad(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((4, 8)), jnp.float32)
    w = jnp.asarray(rng.standard_normal(8), jnp.float32)
    graph = customop.trace(lambda x, w: _block(ops, x, w), x, w, dispatcher=dispatcher)
    expected = jax.jit(_reference)(x, w)
    np.testing.assert_allclose(graph(x, w), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jax.jit(graph)(x, w), expected, rtol=1e-5, atol=1e-6)
    grads = jax.jit(jax.grad(lambda x, w: jnp.sum(graph(x, w) ** 2), argnums=(0, 1)))(x, w)
    reference = jax.jit(jax.grad(lambda x, w: jnp.sum(_reference(x, w) ** 2), argnums=(0, 1)))
    for got, want in zip(grads, reference(x, w), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_graph_traced_on_numpy_runs_on_jax_and_back(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    x, w = np.ones((4, 8), np.float32), np.ones(8, np.float32)
    graph = customop.trace(lambda x, w: _block(ops, x, w), x, w, dispatcher=dispatcher)
    on_numpy = graph(x, w)
    assert type(on_numpy) is np.ndarray
    np.testing.assert_allclose(jax.jit(graph)(jnp.asarray(x), jnp.asarray(w)), on_numpy, rtol=1e-5)

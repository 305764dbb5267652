"""vmap with batching rules: an op's ``register_vmap`` rule is the primitive's batch rule.

The rules here are registered with customop's own ``register_vmap`` (a rule is
the op's ``customop.vmap`` extra), and customop.jax reads them through
``customop.vmap.rule_of`` when ``jax.vmap`` batches the primitive: the rule is
called with torch's arguments (``VmapInfo``, ``in_dims``, the batched arrays).
Without one, the op maps sequentially (``lax.map``) and says so once. The same
registered rules batch ``customop.vmap`` on numpy arrays.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import customop
from customop.dispatch import Dispatcher
from customop.vmap import VmapInfo, rule_of
from tests.jax import ops as kernels


def _counted(name: str, fn: Callable[..., Any], calls: list[str]) -> Callable[..., Any]:
    """``fn``, noting each call in ``calls`` (its signature kept, for register_vmap's check)."""

    @functools.wraps(fn)
    def rule(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return fn(*args, **kwargs)

    return rule


@pytest.fixture
def calls(dispatcher: Dispatcher, ops: SimpleNamespace) -> Iterator[list[str]]:
    """The names of the ops whose rule ran, the rules of `_rule_set` registered."""
    found: list[str] = []
    handles = [
        customop.handle_of(
            customop.register_vmap(name, _counted(name, fn, found), dispatcher=dispatcher)
        )
        for name, fn in _rule_set(ops).items()
    ]
    yield found
    customop.RegistrationHandle.group(handles).remove()


def _front(ops: SimpleNamespace, x: Any, dim: int | None, size: int) -> Any:
    """``x`` with its batch dimension first (a batch of copies when it has none)."""
    if dim is None:
        return ops.broadcast_dim(x, [size, *x.shape], 0, False)
    order = [dim, *(i for i in range(x.ndim) if i != dim)]
    return x.transpose(order)


def _physical(dim: int, ndim: int) -> int:
    """A logical dim of the unbatched op, in the batched array (batch first)."""
    return dim % ndim + 1


def _rule_set(ops: SimpleNamespace) -> dict[str, Callable[..., Any]]:
    """Rules written with customop ops, as torch's are written with torch ops."""

    def elementwise(op: Any, outputs: int = 1) -> Callable[..., Any]:
        def rule(info: VmapInfo, in_dims: tuple[Any, ...], *args: Any, **kwargs: Any) -> Any:
            tensors = [
                _front(ops, a, d, info.batch_size) if hasattr(a, "shape") else a
                for a, d in zip(args, in_dims, strict=True)
            ]
            return op(*tensors, **kwargs), 0 if outputs == 1 else (0,) * outputs

        return rule

    def softmax(info: VmapInfo, in_dims: tuple[Any, ...], x: Any, dim: int) -> Any:
        (bdim, _) = in_dims
        x = _front(ops, x, bdim, info.batch_size)
        return ops.softmax(x, _physical(dim, x.ndim - 1)), 0

    def softmax_backward(
        info: VmapInfo, in_dims: tuple[Any, ...], g: Any, out: Any, dim: int
    ) -> Any:
        g = _front(ops, g, in_dims[0], info.batch_size)
        out = _front(ops, out, in_dims[1], info.batch_size)
        return ops.softmax_backward(g, out, _physical(dim, out.ndim - 1)), 0

    return {
        "jt::gelu": elementwise(ops.gelu),
        "jt::gelu_backward": elementwise(ops.gelu_backward),
        "jt::swiglu": elementwise(ops.swiglu),
        "jt::swiglu_backward": elementwise(ops.swiglu_backward, outputs=2),
        "jt::softmax": softmax,
        "jt::softmax_backward": softmax_backward,
    }


CASES = {
    "gelu": (lambda o, x: o.gelu(x, approximate="tanh"), lambda x: kernels.gelu(jnp, x, "tanh")),
    "softmax": (lambda o, x: o.softmax(x, 0), lambda x: kernels.softmax(jnp, x, 0)),
    "swiglu": (lambda o, x, g: o.swiglu(x, g), lambda x, g: kernels.swiglu(jnp, x, g)),
}
AXES = {"gelu": [0, 1], "softmax": [0, 1], "swiglu": [(0, 0), (0, None), (1, 0)]}
SHAPES = {"gelu": [(4, 6)], "softmax": [(4, 6)], "swiglu": [(4, 6), (4, 6)]}


def _inputs(name: str, axes: Any) -> list[Any]:
    rng = np.random.default_rng(0)
    per_input = axes if isinstance(axes, tuple) else (axes,)
    found = []
    for shape, axis in zip(SHAPES[name], per_input, strict=True):
        full = list(shape) if axis is None else [*shape[:axis], 3, *shape[axis:]]
        found.append(jnp.asarray(rng.standard_normal(full), jnp.float32))
    return found


def _loss(out: Any) -> Any:
    return jnp.sum(jnp.sin(out))


def _cases() -> Iterator[Any]:
    for name in CASES:
        for axes in AXES[name]:
            yield pytest.param(name, axes, id=f"{name}-{axes}")


def _check(ops: SimpleNamespace, name: str, axes: Any) -> None:
    call, ref = CASES[name]
    inputs = _inputs(name, axes)
    argnums = tuple(range(len(inputs)))
    ours = jax.grad(lambda *a: _loss(call(ops, *a)), argnums=argnums)
    theirs = jax.grad(lambda *a: _loss(ref(*a)), argnums=argnums)
    expected_out = jax.jit(jax.vmap(ref, axes))(*inputs)
    np.testing.assert_allclose(jax.vmap(lambda *a: call(ops, *a), axes)(*inputs), expected_out,
                               rtol=1e-5, atol=1e-5)  # fmt: skip
    expected = jax.jit(jax.vmap(theirs, axes))(*inputs)
    for got in (jax.vmap(ours, axes)(*inputs), jax.jit(jax.vmap(ours, axes))(*inputs)):
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("name", "axes"), list(_cases()))
def test_vmap_and_vmap_of_grad_use_the_rules(
    ops: SimpleNamespace, calls: list[str], name: str, axes: Any
) -> None:
    _check(ops, name, axes)  # filterwarnings=error: no sequential fallback warned
    assert f"jt::{name}" in calls
    assert f"jt::{name}_backward" in calls  # the backward op's rule batched the grad


def test_the_primitive_calls_the_registered_rule(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    found: list[str] = []
    registered = customop.register_vmap(
        ops.gelu, _counted("jt::gelu", _rule_set(ops)["jt::gelu"], found), dispatcher=dispatcher
    )
    rule = rule_of(ops.gelu)
    assert rule is not None
    assert rule.fn is registered
    jax.vmap(lambda x: ops.gelu(x, approximate="tanh"))(jnp.ones((3, 4)))
    assert found == ["jt::gelu"]


def test_rules_get_torchs_arguments(dispatcher: Dispatcher, ops: SimpleNamespace) -> None:
    seen: list[Any] = []

    def rule(info: VmapInfo, in_dims: tuple[Any, ...], x: Any, dim: int) -> Any:
        seen.append((info, in_dims, x.shape, dim))
        return ops.softmax(x, _physical(dim, x.ndim - 1) if in_dims[0] == 0 else dim), in_dims[0]

    customop.register_vmap(ops.softmax, rule, dispatcher=dispatcher)
    x = jnp.ones((5, 4, 6))
    jax.vmap(lambda x: ops.softmax(x, -1))(x)
    assert seen == [(VmapInfo(5, "error"), (0, None), (5, 4, 6), -1)]
    assert isinstance(seen[0][0], VmapInfo)


def test_an_out_dims_that_does_not_fit_the_fake_is_refused(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    customop.register_vmap(
        ops.gelu, lambda info, in_dims, x, **kw: (ops.gelu(x, **kw), 1), dispatcher=dispatcher
    )
    with pytest.raises(ValueError, match=r"jt::gelu on JAX arrays: the vmap rule returned shape"):
        jax.vmap(lambda x: ops.gelu(x, approximate="none"))(jnp.ones((3, 4)))


def test_without_a_rule_each_op_maps_sequentially_and_warns_once(ops: SimpleNamespace) -> None:
    x = jnp.arange(12.0).reshape(3, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = jax.vmap(lambda x: ops.gelu(x, approximate="none"))(x)
        again = jax.jit(jax.vmap(lambda x: ops.gelu(x, approximate="none")))(x)
    assert [str(w.message) for w in caught] == [
        "jt::gelu on JAX arrays: jax.vmap runs the op once per batch element (jax.lax.map), "
        "because it has no batching rule. That is correct but sequential. Register a batching "
        "rule with gelu.register_vmap(rule) to compute the batch in one call."
    ]
    assert caught[0].filename == __file__  # points at the caller, past customop and jax
    expected = kernels.gelu(jnp, x, "none")
    np.testing.assert_allclose(first, expected, rtol=1e-6)
    np.testing.assert_allclose(again, expected, rtol=1e-6)
    jaxpr = str(jax.make_jaxpr(jax.vmap(lambda x: ops.gelu(x, approximate="none")))(x))
    assert "scan" in jaxpr  # lax.map: one primitive call per element, in a loop


def test_a_rule_registered_or_removed_later_is_seen_by_the_next_trace(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    """The op's plan follows its rule; a function JAX traced before keeps its trace."""
    x = jnp.arange(12.0).reshape(3, 4)

    def jaxpr() -> str:  # a new function each time: traced anew
        return str(jax.make_jaxpr(jax.vmap(lambda x: ops.softmax(x, -1)))(x))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert "scan" in jaxpr()  # no rule yet: a sequential map
    assert len(caught) == 1
    found: list[str] = []
    rule = _counted("jt::softmax", _rule_set(ops)["jt::softmax"], found)
    handle = customop.handle_of(customop.register_vmap(ops.softmax, rule, dispatcher=dispatcher))
    assert "scan" not in jaxpr()  # the rule: one call on the batch
    assert found == ["jt::softmax"]
    got = jax.vmap(lambda x: ops.softmax(x, -1))(x)
    np.testing.assert_allclose(got, kernels.softmax(jnp, x, -1), rtol=1e-6)
    handle.remove()
    assert "scan" in jaxpr()  # sequential again (it warned once per op already)
    assert found == ["jt::softmax", "jt::softmax"]


@pytest.mark.parametrize(("name", "axes"), list(_cases()))
def test_the_same_rules_batch_customop_vmap(
    dispatcher: Dispatcher, ops: SimpleNamespace, calls: list[str], name: str, axes: Any
) -> None:
    call, _ = CASES[name]
    inputs = [np.asarray(x, np.float64) for x in _inputs(name, axes)]
    got = customop.vmap(lambda *a: call(ops, *a), axes, dispatcher=dispatcher)(*inputs)
    per_input = axes if isinstance(axes, tuple) else (axes,)
    size = next(x.shape[d] for x, d in zip(inputs, per_input, strict=True) if d is not None)
    examples = [
        [x if d is None else np.take(x, i, axis=d) for x, d in zip(inputs, per_input, strict=True)]
        for i in range(size)
    ]
    expected = np.stack([call(ops, *example) for example in examples])
    np.testing.assert_allclose(got, expected, rtol=1e-12)  # filterwarnings=error: no loop
    assert calls == [f"jt::{name}"]

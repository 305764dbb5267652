"""What JAX's primitive contract cannot carry is refused, naming the op and the fix."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import customop
from customop import AutogradError, Dispatcher, MissingKernelError
from customop.tensor import DataDependentError


def _define(dispatcher: Dispatcher, schema: str, **kernels: Any) -> Any:
    """An op from its schema and kernels by key (``Fake=``, ``CPU=``, ``jax=``)."""
    dispatcher.register_def(f"jx::{schema}")
    name = f"jx::{schema.split('(', 1)[0]}"
    for key, fn in kernels.items():
        if key == "jax":
            customop.register_kernel(name, "jax", fn, dispatcher=dispatcher)
        else:
            dispatcher.register_impl(name, key, fn)
    return dispatcher.find_op(name)


def test_a_mutating_op(dispatcher: Dispatcher) -> None:
    def fill(x: Any) -> None:
        x[...] = 0

    op = _define(dispatcher, "fill_(Tensor(a!) x) -> ()", CPU=fill)
    with pytest.raises(ValueError) as caught:
        op(jnp.ones(3))
    assert str(caught.value) == (
        "jx::fill_ on JAX arrays: the op writes to its argument 'x'. JAX arrays are immutable: "
        "every JAX operation makes new arrays. Call a functional variant of the op (one that "
        "returns its result)."
    )


def test_a_data_dependent_size(dispatcher: Dispatcher) -> None:
    def fake(x: Any) -> Any:
        return customop.new_empty(x, (customop.get_ctx().new_dynamic_size(),))

    op = _define(dispatcher, "nonzero(Tensor x) -> Tensor", CPU=lambda x: x[x != 0])
    customop.register_fake("jx::nonzero", fake, dispatcher=dispatcher)
    for run in (op, jax.jit(op)):
        with pytest.raises(DataDependentError) as caught:
            run(jnp.ones(3))
        assert str(caught.value) == (
            "jx::nonzero on JAX arrays: output 0 of the fake impl has the data-dependent shape "
            "(s0,). JAX needs every result shape while it traces, and a size from "
            "get_ctx().new_dynamic_size() is only known once the kernel ran. Give the op a "
            "static result shape (pad to a maximum size, and return the count as a second "
            "output), or call it on numpy arrays outside JAX."
        )


def test_a_missing_formula_raises_only_when_differentiated(dispatcher: Dispatcher) -> None:
    op = _define(
        dispatcher,
        "double(Tensor x) -> Tensor",
        jax=lambda x: x * 2,
        Fake=lambda x: customop.empty_like(x),
    )
    x = jnp.ones(3)
    np.testing.assert_array_equal(jax.jit(op)(x), [2.0, 2.0, 2.0])  # no gradient asked: fine
    for differentiate in (jax.grad, lambda f: jax.jit(jax.grad(f))):
        with pytest.raises(AutogradError) as caught:
            differentiate(lambda x: op(x).sum())(x)
        assert str(caught.value) == (
            "jx::double on JAX arrays: a gradient flows through 'jx::double', which has no "
            "autograd formula. customop gives JAX the op's own backward formula, and this op "
            "has none. Register one with double.register_autograd(backward, setup_context=...) "
            "or customop.register_autograd('jx::double', ...), or make the op "
            "CompositeImplicitAutograd over ops that have formulas."
        )


def test_a_missing_kernel(dispatcher: Dispatcher) -> None:
    op = _define(
        dispatcher,
        "gpu_only(Tensor x) -> Tensor",
        CUDA=lambda x: x,
        Fake=lambda x: customop.empty_like(x),
    )
    # Shapes need no kernel: tracing works, running does not.
    assert jax.eval_shape(op, jnp.ones(3)).shape == (3,)
    for run in (op, jax.jit(op)):
        with pytest.raises(MissingKernelError) as caught:
            run(jnp.ones(3))
        assert str(caught.value) == (
            "jx::gpu_only on JAX arrays: the op has no kernel JAX can run: no 'jax' kernel and "
            "no CPU kernel. customop lowers a call to a kernel written with jax.numpy "
            "(inline), else to the numpy CPU kernel through jax.pure_callback (on the host). "
            "Register one with @gpu_only.register_kernel('jax') (jax.numpy code) or "
            "@gpu_only.register_kernel('cpu') (numpy code)."
        )


def test_a_missing_fake_impl(dispatcher: Dispatcher) -> None:
    op = _define(dispatcher, "plain(Tensor x) -> Tensor", jax=lambda x: x)
    with pytest.raises(MissingKernelError) as caught:
        jax.jit(op)(jnp.ones(3))
    assert str(caught.value) == (
        "jx::plain on JAX arrays: the op has no fake impl. JAX asks for output shapes and "
        "dtypes while it traces, and customop answers with the fake impl, never a kernel. "
        "Register one with @plain.register_fake (customop.register_fake('jx::plain', fn) for "
        "Library ops)."
    )


def test_forward_mode(dispatcher: Dispatcher) -> None:
    op = _define(
        dispatcher,
        "double(Tensor x) -> Tensor",
        jax=lambda x: x * 2,
        Fake=lambda x: customop.empty_like(x),
    )
    customop.register_autograd(op, lambda ctx, g: op(g), dispatcher=dispatcher)
    x = jnp.ones(3)
    np.testing.assert_array_equal(jax.grad(lambda x: op(x).sum())(x), [2.0, 2.0, 2.0])
    with pytest.raises(AutogradError, match=r"^jx::double on JAX arrays: forward-mode"):
        jax.jvp(op, (x,), (x,))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            {"a": 1},
            "jx::sizes on JAX arrays: argument 'sizes' is a dict, which cannot be hashed. JAX "
            "keys its compile caches on a primitive's parameters, so they must be hashable. Pass "
            "ints, floats, bools, strings, dtypes, enums, or lists and tuples of them.",
        ),
        (
            [1, [2, {}]],
            "jx::sizes on JAX arrays: argument 'sizes' (list) holds a dict, which cannot be "
            "hashed. JAX "
            "keys its compile caches on a primitive's parameters, so they must be hashable. Pass "
            "ints, floats, bools, strings, dtypes, enums, or lists and tuples of them.",
        ),
    ],
    ids=["dict", "dict-in-a-list"],
)
def test_static_arguments_must_hash(dispatcher: Dispatcher, value: Any, message: str) -> None:
    op = _define(
        dispatcher,
        "sizes(Tensor x, Any sizes) -> Tensor",
        jax=lambda x, sizes: x,
        Fake=lambda x, sizes: customop.empty_like(x),
    )
    with pytest.raises(TypeError) as caught:
        op(jnp.ones(2), value)
    assert str(caught.value) == message


def test_a_traced_value_where_the_schema_wants_a_python_value(dispatcher: Dispatcher) -> None:
    op = _define(
        dispatcher,
        "shift(Tensor x, Any by) -> Tensor",
        jax=lambda x, by: x + by,
        Fake=lambda x, by: customop.empty_like(x),
    )
    with pytest.raises(TypeError) as caught:
        jax.jit(op)(jnp.ones(2), jnp.float32(1))
    assert str(caught.value).startswith(
        "jx::shift on JAX arrays: argument 'by' (Any) is an array, DynamicJaxprTracer. On JAX "
        "arrays, non-tensor arguments are static parameters of the primitive: Python values, "
        "fixed when JAX traces. Pass a Python value, or declare the argument a Tensor"
    )


def test_a_kernel_that_disagrees_with_its_fake(dispatcher: Dispatcher) -> None:
    op = _define(
        dispatcher,
        "wrong(Tensor x) -> Tensor",
        jax=lambda x: x[:1],
        Fake=lambda x: customop.empty_like(x),
    )
    with pytest.raises(ValueError) as caught:
        jax.jit(op)(jnp.ones(3))
    assert str(caught.value) == (
        "jx::wrong on JAX arrays: its 'jax' kernel returned float32[1] as output 0, but the "
        "fake impl says float32[3]. JAX compiled the call around the fake impl's shapes and "
        "dtypes. Make the kernel and the fake impl agree (customop.opcheck finds where)."
    )


def test_a_non_tensor_return(dispatcher: Dispatcher) -> None:
    op = _define(
        dispatcher,
        "count(Tensor x) -> int",
        CPU=lambda x: int(x.size),
        Fake=lambda x: 3,
    )
    with pytest.raises(TypeError) as caught:
        jax.jit(op)(jnp.ones(3))
    assert str(caught.value) == (
        "jx::count on JAX arrays: the op returns int. A JAX primitive returns arrays only. "
        "Return tensors (Tensor or Tensor[]); pass other results as static arguments."
    )

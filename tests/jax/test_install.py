"""The backend: the "jax" key, JAX's array types, one kernel per op that binds the primitive."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import customop
import customop.jax
from customop import Dispatcher, DispatchKey, Library
from customop.tensor import install_backends

_names = itertools.count()


@pytest.fixture
def scale(dispatcher: Dispatcher) -> Any:
    """A @custom_op with a numpy body only: JAX runs it through pure_callback."""
    calls: list[str] = []

    @customop.custom_op("ji::scale", mutates_args=(), dispatcher=dispatcher)
    def scale(x: np.ndarray, alpha: float = 2.0) -> np.ndarray:
        calls.append(type(x).__module__)
        return x * alpha

    scale.register_fake(lambda x, alpha=2.0: customop.empty_like(x))
    scale.calls = calls  # type: ignore[attr-defined]
    return scale


@pytest.fixture
def global_op() -> Iterator[str]:
    """An op of customop.dispatcher (for customop.ops), with a jnp kernel; its namespace."""
    ns = f"jig{next(_names)}"
    lib = Library(ns, "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    customop.register_kernel(f"{ns}::twice", "cpu", lambda x: x * 2, lib=lib)
    customop.register_kernel(f"{ns}::twice", "jax", lambda x: x * 2, lib=lib)
    customop.register_fake(f"{ns}::twice", lambda x: customop.empty_like(x), lib=lib)
    yield ns
    lib.close()


def _primitive_calls(fn: Any, *args: Any) -> list[str]:
    """The customop ops a jaxpr of ``fn`` binds, by name, in order."""
    jaxpr = jax.make_jaxpr(fn)(*args)
    return [str(e.params["op"]) for e in jaxpr.eqns if e.primitive is customop.jax.PRIMITIVE]


def test_import_installs_the_backend_in_customop_dispatcher() -> None:
    d = customop.dispatcher
    assert d.key_name(DispatchKey.PrivateUse2) == "jax"
    assert customop.jax.KEY is DispatchKey.PrivateUse2
    assert customop.tensor.device_of(jnp.ones(2)) == customop.Device("jax")


def test_every_spelling_binds_the_primitive(global_op: str) -> None:
    packet = getattr(customop.ops, global_op).twice
    handle = customop.dispatcher.find_op(f"{global_op}::twice")
    x = jnp.arange(3.0)
    spellings = {
        "packet": packet,
        "overload": packet.default,
        "handle": handle,
        "graph": customop.trace(packet, x),
    }
    for name, call in spellings.items():
        assert _primitive_calls(call, x) == [f"{global_op}::twice"], name
        np.testing.assert_array_equal(call(x), [0.0, 2.0, 4.0])
        np.testing.assert_array_equal(jax.jit(call)(x), [0.0, 2.0, 4.0])


def test_the_custom_op_object_binds_it_and_numpy_calls_stay_numpy(scale: Any) -> None:
    x = jnp.arange(3.0)
    assert _primitive_calls(lambda x: scale(x, 3.0), x) == ["ji::scale"]
    result = scale(x, 3.0)
    assert isinstance(result, jax.Array)
    np.testing.assert_array_equal(result, [0.0, 3.0, 6.0])
    plain = scale(np.arange(3.0), 3.0)
    assert type(plain) is np.ndarray
    assert scale.calls == ["numpy", "numpy"]  # the callback hands the kernel numpy arrays


def test_numpy_arrays_beside_jax_ones_become_operands(dispatcher: Dispatcher) -> None:
    @customop.custom_op("ji::add", mutates_args=(), dispatcher=dispatcher)
    def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b

    add.register_fake(lambda a, b: customop.empty_like(a))
    result = jax.jit(lambda a: add(a, np.ones(3, np.float32)))(jnp.arange(3.0))
    np.testing.assert_array_equal(result, [1.0, 2.0, 3.0])


def test_dump_table_says_what_runs(dispatcher: Dispatcher, scale: Any) -> None:
    def line() -> str:
        table = dispatcher.dump_table("ji::scale").splitlines()
        return next(entry for entry in table if entry.startswith("AutogradJax:"))

    assert line() == (
        "AutogradJax:         jax_primitive[CPU kernel through jax.pure_callback (host only)] "
        "at <customop jax> (binds the customop JAX primitive) [kernel]"
    )
    scale.register_kernel("jax", lambda x, alpha=2.0: x * alpha)
    assert line() == (
        "AutogradJax:         jax_primitive['jax' kernel, inline] at <customop jax> "
        "(binds the customop JAX primitive) [kernel]"
    )


def test_describe(dispatcher: Dispatcher, scale: Any) -> None:
    assert customop.jax.describe(scale) == (
        "ji::scale on JAX arrays binds the customop primitive, which runs its CPU kernel on "
        "numpy arrays through jax.pure_callback (host only); grad uses no formula (grad "
        "raises); vmap uses a sequential map."
    )
    with pytest.raises(ValueError, match="no JAX backend"):
        customop.jax.describe("ji::scale", dispatcher=_plain_dispatcher(scale))


def _plain_dispatcher(scale: Any) -> Dispatcher:
    d = Dispatcher()
    d.register_def("ji::scale(Tensor x, float alpha=2.) -> Tensor")
    return d


def test_a_kernel_registered_later_is_used_by_the_next_trace(scale: Any) -> None:
    x = jnp.arange(3.0)
    before = jax.jit(lambda x: scale(x, 2.0)).lower(x).as_text()
    assert "callback" in before  # pure_callback: a host call in the HLO
    scale.register_kernel("jax", lambda x, alpha=2.0: x * alpha)
    after = jax.jit(lambda x: scale(x, 2.0)).lower(x).as_text()
    assert "callback" not in after
    assert "stablehlo.multiply" in after


def test_ops_defined_before_the_backend_are_served_too() -> None:
    d = Dispatcher()
    install_backends(d)
    d.register_def("ji::neg(Tensor x) -> Tensor")
    d.register_impl("ji::neg", "CPU", lambda x: -x)
    d.register_impl("ji::neg", "Fake", lambda x: customop.empty_like(x))
    backend = customop.jax.install(d)
    neg = d.find_op("ji::neg")
    np.testing.assert_array_equal(jax.jit(neg)(jnp.ones(2)), [-1.0, -1.0])
    backend.remove()
    assert d.key_name(DispatchKey.PrivateUse2) == "PrivateUse2"
    assert "AutogradPrivateUse2: fallthrough" in d.dump_table("ji::neg")
    with pytest.raises(TypeError):
        neg(jnp.ones(2))  # no longer a tensor type of this dispatcher


def test_removing_an_op_leaves_nothing_behind(dispatcher: Dispatcher) -> None:
    lib = Library("jr", "DEF", dispatcher=dispatcher)
    lib.define("f(Tensor x) -> Tensor")
    lib.impl("f", lambda x: x, "CPU")
    assert "AutogradJax" in dispatcher.dump_table("jr::f")
    lib.close()
    assert dispatcher.find_op("jr::f") is None
    assert dispatcher.find_dangling_impls() == ()


def test_a_redefined_custom_op_is_served_with_its_new_kernels(dispatcher: Dispatcher) -> None:
    for factor in (2.0, 3.0):

        @customop.custom_op("ji::mul", mutates_args=(), dispatcher=dispatcher)
        def mul(x: np.ndarray) -> np.ndarray:
            return x * factor  # noqa: B023 -- each definition its own factor

        mul.register_fake(lambda x: customop.empty_like(x))
        np.testing.assert_array_equal(jax.jit(mul)(jnp.ones(2)), [factor, factor])
    assert dispatcher.find_dangling_impls() == ()


def test_a_decomposing_op_binds_the_ops_it_calls(dispatcher: Dispatcher, scale: Any) -> None:
    lib = Library("jd", "DEF", dispatcher=dispatcher)
    lib.define("quadruple(Tensor x) -> Tensor")
    lib.impl("quadruple", lambda x: scale(scale(x, 2.0), 2.0), "CompositeImplicitAutograd")
    quadruple = dispatcher.find_op("jd::quadruple")
    x = jnp.arange(3.0)
    assert _primitive_calls(quadruple, x) == ["ji::scale", "ji::scale"]
    np.testing.assert_array_equal(jax.jit(quadruple)(x), [0.0, 4.0, 8.0])
    lib.close()


def test_a_fake_tensor_among_the_arguments_runs_the_fake_impl(scale: Any) -> None:
    @customop.custom_op("ji::addf", mutates_args=(), dispatcher=scale.op.handle.dispatcher)
    def addf(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b

    addf.register_fake(lambda a, b: customop.empty_like(b))
    out = addf(jnp.ones(3), customop.FakeTensor((3,), "float32"))
    assert isinstance(out, customop.FakeTensor)
    assert out.shape == (3,)


def _counting(dispatcher: Dispatcher) -> SimpleNamespace:
    """An op whose jnp kernel counts how often JAX traces it (at every compile)."""
    seen = SimpleNamespace(traces=0)

    @customop.custom_op("ji::axpy", mutates_args=(), dispatcher=dispatcher)
    def axpy(x: np.ndarray, y: np.ndarray, a: float) -> np.ndarray:
        return a * x + y

    @axpy.register_kernel("jax")
    def _(x: Any, y: Any, a: float) -> Any:
        seen.traces += 1
        return a * x + y

    axpy.register_fake(lambda x, y, a: customop.empty_like(x))
    seen.op = axpy
    return seen


def test_eager_calls_reuse_one_compiled_call(dispatcher: Dispatcher) -> None:
    seen = _counting(dispatcher)
    x, y = jnp.ones(4), jnp.ones(4)
    for _ in range(5):
        seen.op(x, y, 2.0)
    assert seen.traces == 1  # same op, avals and static arguments: JAX's cache
    seen.op(x, y, 3.0)
    assert seen.traces == 2  # a new Python scalar is a new static parameter: compiled again
    seen.op(jnp.ones(5), jnp.ones(5), 3.0)
    assert seen.traces == 3  # new shapes


def test_jit_traces_once_per_signature(dispatcher: Dispatcher) -> None:
    seen = _counting(dispatcher)
    f = jax.jit(lambda x, y: seen.op(seen.op(x, y, 2.0), y, 2.0))
    f(jnp.ones(4), jnp.ones(4))
    # Lowered once per call site at most: newer JAX lowers the two identical primitive
    # calls (op, avals, statics) once per module.
    first = seen.traces
    assert first in (1, 2)
    for _ in range(4):
        f(jnp.ones(4), jnp.ones(4))
    assert seen.traces == first  # no retrace, no recompile per call
    f(jnp.ones(6), jnp.ones(6))
    assert seen.traces == 2 * first


def test_statics_print_in_jaxprs(scale: Any) -> None:
    jaxpr = str(jax.make_jaxpr(lambda x: scale(x, 0.5))(jnp.ones(2)))
    assert "customop[args=(x=T, alpha=0.5) op=ji::scale]" in jaxpr


def test_disable_jit_runs_the_kernels_uncompiled(scale: Any) -> None:
    x = jnp.arange(3.0)
    with jax.disable_jit():
        np.testing.assert_array_equal(scale(x, 2.0), [0.0, 2.0, 4.0])  # the numpy kernel
        scale.register_kernel("jax", lambda x, alpha=2.0: x * alpha)
        np.testing.assert_array_equal(scale(x, 3.0), [0.0, 3.0, 6.0])  # the jnp kernel


def test_concrete_arrays_inside_a_trace_are_staged(scale: Any) -> None:
    constant = jnp.arange(3.0)  # closed over: concrete, not a tracer, inside the traces
    np.testing.assert_array_equal(jax.jit(lambda x: x + scale(constant, 2.0))(1.0), [1, 3, 5])
    jaxpr = str(jax.make_jaxpr(lambda x: x + scale(constant, 2.0))(1.0))
    assert "op=ji::scale" in jaxpr  # the primitive is in the jaxpr, not its value
    grad = jax.grad(lambda x: jnp.sum(x * scale(constant, 2.0)))(1.0)
    assert float(grad) == 6.0  # a constant needs no formula

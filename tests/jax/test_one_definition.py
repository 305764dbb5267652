"""One op definition, unchanged: on numpy, as a torch op under torch.compile, under jax.jit.

The definition is what a library author ships once: a kernel written against
whichever array module its inputs come from (numpy, torch or jax.numpy), the
same function registered for the ``"jax"`` device so XLA traces it inline, a
fake impl, and a backward formula that calls a backward op. Each system runs
it with its own machinery: customop's dispatcher and autograd on numpy
arrays, ``torch.library`` and torch's autograd under ``torch.compile``, a JAX
primitive under ``jax.jit`` and ``jax.vjp``. The results agree.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from types import ModuleType, SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import customop
import customop.jax
from customop import Dispatcher, Tensor

torch = pytest.importorskip("torch")
import customop.torch  # noqa: E402

_names = itertools.count()


def _xp(x: Any) -> ModuleType:
    """The array module of ``x``: numpy, torch or jax.numpy (for arrays and tracers)."""
    return {"numpy": np, "torch": torch}.get(type(x).__module__.split(".")[0], jnp)


def _swiglu(x: Any, gate: Any) -> Any:
    return x * gate / (1 + _xp(gate).exp(-gate))


def _swiglu_backward(grad: Any, x: Any, gate: Any) -> Any:
    sig = 1 / (1 + _xp(gate).exp(-gate))
    return grad * gate * sig, grad * x * sig * (1 + gate * (1 - sig))


def define(dispatcher: Dispatcher, ns: str) -> SimpleNamespace:
    """The definition: a forward op and its backward op, each with kernels and a fake."""

    @customop.custom_op(f"{ns}::swiglu", mutates_args=(), dispatcher=dispatcher)
    def swiglu(x: Tensor, gate: Tensor) -> Tensor:
        return _swiglu(x, gate)

    @customop.custom_op(f"{ns}::swiglu_backward", mutates_args=(), dispatcher=dispatcher)
    def swiglu_backward(grad: Tensor, x: Tensor, gate: Tensor) -> tuple[Tensor, Tensor]:
        return _swiglu_backward(grad, x, gate)  # type: ignore[no-any-return]

    for op, kernel in ((swiglu, _swiglu), (swiglu_backward, _swiglu_backward)):
        op.register_kernel("jax", kernel)
    swiglu.register_fake(lambda x, gate: customop.empty_like(x))
    swiglu_backward.register_fake(
        lambda grad, x, gate: (customop.empty_like(x), customop.empty_like(gate))
    )

    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.save_for_backward(*inputs)

    def backward(ctx: Any, grad: Any) -> Any:
        return swiglu_backward(grad, *ctx.saved_tensors)

    swiglu.register_autograd(backward, setup_context=setup_context)
    return SimpleNamespace(swiglu=swiglu, backward=swiglu_backward)


@pytest.fixture
def ns() -> str:
    return f"jone{next(_names)}"


@pytest.fixture
def defined(dispatcher: Dispatcher, ns: str) -> Iterator[SimpleNamespace]:
    ops = define(dispatcher, ns)
    registered = customop.torch.register(ns, dispatcher=dispatcher)
    torch._dynamo.reset()
    yield ops
    registered.remove()


def _inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return tuple(rng.standard_normal((4, 6)).astype(np.float32) for _ in range(3))  # type: ignore[return-value]


def _numpy(ops: SimpleNamespace, d: Dispatcher) -> tuple[Any, ...]:
    x, gate, cotangent = _inputs()
    out, pullback = customop.autograd.vjp(ops.swiglu, x, gate, dispatcher=d)
    return (out, *pullback(cotangent))


def _torch(ops: SimpleNamespace) -> tuple[Any, ...]:
    x, gate, cotangent = (torch.from_numpy(a) for a in _inputs())
    x.requires_grad_()
    gate.requires_grad_()
    compiled = torch.compile(lambda x, g: ops.swiglu(x, g) * 1, fullgraph=True, backend="aot_eager")
    out = compiled(x, gate)
    out.backward(cotangent)
    return (out.detach().numpy(), x.grad.numpy(), gate.grad.numpy())


def _jax(ops: SimpleNamespace) -> tuple[Any, ...]:
    x, gate, cotangent = (jnp.asarray(a) for a in _inputs())

    @jax.jit
    def forward_and_vjp(x: Any, gate: Any, cotangent: Any) -> Any:
        out, pullback = jax.vjp(ops.swiglu, x, gate)
        return (out, *pullback(cotangent))

    return tuple(np.asarray(a) for a in forward_and_vjp(x, gate, cotangent))


def test_numpy_torch_compile_and_jax_jit_agree(
    dispatcher: Dispatcher, defined: SimpleNamespace
) -> None:
    on_numpy = _numpy(defined, dispatcher)
    for name, results in (("torch", _torch(defined)), ("jax", _jax(defined))):
        for got, want in zip(results, on_numpy, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_jax_runs_the_jax_kernel_inline_and_torch_its_own_op(defined: SimpleNamespace) -> None:
    x = jnp.ones((2, 3))
    hlo = jax.jit(defined.swiglu).lower(x, x).as_text()
    assert "callback" not in hlo
    assert "stablehlo.exponential" in hlo
    assert customop.jax.describe(defined.swiglu).startswith(
        f"{defined.swiglu.name} on JAX arrays binds the customop primitive, which runs its 'jax' "
        "kernel, traced inline; grad uses its autograd formula"
    )

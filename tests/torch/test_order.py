"""The torch op does not depend on the order of registration (issue #26 §1).

Every order of {register the namespace in torch, define the op, add its
fake, add its formula, add a kernel, call it once in eager} must give the
same torch op: the formula reaches torch (outputs require grad, backward
runs it), kernels under it run below autograd (no_grad), one
``torch.compile(fullgraph=True)`` of the three call spellings compiles, and
``torch.export`` records the op instead of inlining its kernel.
"""

from __future__ import annotations

import contextlib
import itertools
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import customop
import customop.torch

STEPS = ("register", "define", "fake", "formula", "kernel", "call")


def _orders(*after_define: str) -> list[tuple[str, ...]]:
    """Every order of STEPS in which ``after_define`` (and the first call) follow the def."""
    later = (*after_define, "call")
    return [
        order
        for order in itertools.permutations(STEPS)
        if all(order.index(step) > order.index("define") for step in later)
    ]


class _Op:
    """One op built step by step; ``flavour`` says how (``@custom_op`` or ``Library``)."""

    def __init__(self, ns: str, flavour: str, track: list[Any]) -> None:
        self.ns, self.flavour, self.track = ns, flavour, track
        self.op: Any = None
        self.lib: Any = None
        self.kernel_calls: list[bool] = []

    def kernel(self, x: Any) -> Any:
        # torch runs kernels under a formula below autograd: grad mode is off there.
        self.kernel_calls.append(torch.is_grad_enabled() and x.requires_grad)
        return torch.from_numpy(x.numpy() * 2)

    def library(self) -> Any:
        if self.lib is None:
            self.lib = customop.Library(self.ns, "FRAGMENT")
            self.track.append(self.lib)
        return self.lib

    def step(self, name: str) -> None:
        getattr(self, f"_{name}")()

    def _register(self) -> None:
        self.track.append(customop.torch.register(self.ns))

    def _define(self) -> None:
        if self.flavour == "custom_op":  # a body for cuda only: the cpu kernel comes later
            self.op = customop.custom_op(
                f"{self.ns}::f",
                lambda x: x * 2,
                mutates_args=(),
                device_types="cuda",
                schema="(Tensor x) -> Tensor",
            )
            self.track.append(self.op)
        else:
            self.library().define("f(Tensor x) -> Tensor")

    def _fake(self) -> None:
        customop.register_fake(f"{self.ns}::f", lambda x: customop.empty_like(x))

    def _formula(self) -> None:
        self.track.append(customop.register_autograd(f"{self.ns}::f", lambda ctx, g: g * 2))

    def _kernel(self) -> None:
        if self.flavour == "custom_op":
            self.op.register_kernel("cpu", self.kernel)
        else:  # a Library kernel may come before the def (a dangling impl)
            self.library().impl("f", self.kernel, "CPU")

    def _call(self) -> None:
        # Before the cpu kernel: customop's or torch's missing-kernel error.
        with contextlib.suppress(NotImplementedError):
            self.call_object()(torch.ones(2))

    def call_object(self) -> Callable[..., Any]:
        return self.op if self.op is not None else getattr(customop.ops, self.ns).f


def _check_torch_op(op: _Op) -> None:
    ns, obj = op.ns, op.call_object()
    spellings: dict[str, Callable[..., Any]] = {
        "object": obj,
        "customop.ops": lambda x: getattr(customop.ops, ns).f(x),
        "torch.ops": lambda x: getattr(torch.ops, ns).f(x),
    }
    for name, call in spellings.items():
        x = torch.ones(2, requires_grad=True)
        out = call(x)
        assert out.requires_grad, name
        out.sum().backward()
        assert torch.equal(x.grad, torch.full((2,), 2.0)), name
    assert op.kernel_calls and not any(op.kernel_calls)  # never with grad on

    graphs: list[Any] = []

    def backend(gm: Any, example_inputs: Any) -> Any:
        graphs.append(gm)
        return gm.forward

    def fn(x: torch.Tensor) -> torch.Tensor:
        return sum((call(x) for call in spellings.values()), torch.zeros(2))

    torch._dynamo.reset()
    x = torch.ones(2)
    assert torch.equal(torch.compile(fn, fullgraph=True, backend=backend)(x), fn(x))
    (graph,) = graphs
    assert sum(ns in str(n.target) for n in graph.graph.nodes) == 3

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return obj(x) + 1

    exported = torch.export.export(Model(), (x,))
    assert [str(n.target) for n in exported.graph.nodes if ns in str(n.target)] == [
        f"{ns}.f.default"
    ]


@pytest.mark.parametrize("order", _orders("fake", "formula", "kernel"), ids="-".join)
def test_custom_op_in_every_order(ns: str, track: list[Any], order: tuple[str, ...]) -> None:
    op = _Op(ns, "custom_op", track)
    for step in order:
        op.step(step)
    _check_torch_op(op)


@pytest.mark.parametrize("order", _orders("fake", "formula"), ids="-".join)
def test_library_op_in_every_order(ns: str, track: list[Any], order: tuple[str, ...]) -> None:
    op = _Op(ns, "library", track)
    with warnings.catch_warnings():  # a first call before the kernel: torch may warn
        for step in order:
            op.step(step)
    _check_torch_op(op)


class _Double(torch.autograd.Function):
    """An Autograd-key kernel as torch's tests write one: the op below autograd."""

    op: Any = None

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        with torch._C._AutoDispatchBelowAutograd():
            return _Double.op(x)  # type: ignore[no-any-return]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad * 3  # deliberately not 2: proves this kernel's backward ran


def _autograd_orders() -> list[tuple[str, ...]]:
    """Orders of the four steps; a call before the torch registration comes before the
    Autograd kernel too: customop's own dispatcher does not see torch's below-autograd
    guard, so unbridged such a kernel would call itself (docs/torch.md)."""
    steps = ("register", "define", "autograd", "call")
    return [
        o
        for o in itertools.permutations(steps)
        if o.index("define") < o.index("call")
        and (o.index("register") < o.index("call") or o.index("call") < o.index("autograd"))
    ]


@pytest.mark.parametrize("order", _autograd_orders(), ids="-".join)
def test_autograd_key_kernels_keep_running_once_bridged(
    ns: str, track: list[Any], order: tuple[str, ...]
) -> None:
    lib = customop.Library(ns, "FRAGMENT")
    track.append(lib)
    lib.impl("f", lambda x: x * 2, "CPU")
    for step in order:
        if step == "register":
            track.append(customop.torch.register(ns))
        elif step == "define":
            lib.define("f(Tensor x) -> Tensor")
            _Double.op = getattr(customop.ops, ns).f.default
        elif step == "autograd":
            lib.impl("f", _Double.apply, "Autograd")
        else:
            getattr(customop.ops, ns).f(torch.ones(1))
    for call in (getattr(customop.ops, ns).f, getattr(torch.ops, ns).f):
        x = torch.ones(2, requires_grad=True)
        call(x).sum().backward()
        assert torch.equal(x.grad, torch.full((2,), 3.0))


@pytest.mark.parametrize("kernel", ["cpu", "default"], ids=str)
def test_a_redefinition_never_leaves_torch_a_kernel_without_autograd(
    ns: str, track: list[Any], monkeypatch: pytest.MonkeyPatch, kernel: str
) -> None:
    # The old @custom_op's registrations go one by one (its definition record
    # before its kernels); at no step may torch hold its kernel without an
    # autograd kernel, or a call in another thread would backprop through torch's
    # not-implemented fallback and lose its gradient without an error.
    from customop.torch import _mirror

    steps: list[Any] = []
    register = _mirror.TorchMirror._register

    def recording(self: Any, lib: Any, wanted: Any, **kwargs: Any) -> None:
        steps.append(wanted)
        register(self, lib, wanted, **kwargs)

    monkeypatch.setattr(_mirror.TorchMirror, "_register", recording)

    def define(factor: float) -> Any:
        op = customop.custom_op(
            f"{ns}::f",
            lambda x: x.detach() * factor,
            mutates_args=(),
            schema="(Tensor x) -> Tensor",
            device_types="cpu" if kernel == "cpu" else None,
        )
        op.register_autograd(lambda ctx, g: g * factor)
        track.append(op)
        return op

    define(2.0)
    track.append(customop.torch.register(ns))
    steps.clear()
    new = define(3.0)
    assert steps, "the redefinition reached torch"
    assert all(step.formula for step in steps if step.keys), steps
    x = torch.ones(2, requires_grad=True)
    (grad,) = torch.autograd.grad(new(x).sum(), x)
    assert torch.equal(grad, torch.full((2,), 3.0))

"""torch.compile (fullgraph) and torch.export of functions calling customop ops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import customop
import customop.torch


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> None:
    torch._dynamo.reset()


@pytest.fixture
def add(ns: str, track: list[Any]) -> Any:
    @customop.custom_op(f"{ns}::add", mutates_args=())
    def add(x: customop.Tensor, y: customop.Tensor, alpha: float = 1.0) -> customop.Tensor:
        return x + alpha * y

    add.register_fake(lambda x, y, alpha=1.0: customop.empty_like(x))
    track.append(add)
    track.append(customop.torch.register(add))
    return add


def _graphs(fn: Callable[..., Any], *args: Any, dynamic: bool | None = None) -> list[Any]:
    """The Dynamo graphs of ``fn`` (fullgraph: exactly one), results checked against eager."""
    graphs: list[Any] = []

    def backend(gm: Any, example_inputs: Any) -> Any:
        graphs.append(gm)
        return gm.forward

    compiled = torch.compile(fn, fullgraph=True, backend=backend, dynamic=dynamic)
    assert torch.allclose(compiled(*args), fn(*args))
    return graphs


def _op_nodes(graph: Any, ns: str) -> list[Any]:
    return [n for n in graph.graph.nodes if n.op == "call_function" and ns in str(n.target)]


SPELLINGS: dict[str, Callable[[Any, str], Callable[..., Any]]] = {
    "object": lambda op, ns: op,
    "customop.ops": lambda op, ns: lambda *a: getattr(customop.ops, ns).add(*a),
    "customop.ops.default": lambda op, ns: lambda *a: getattr(customop.ops, ns).add.default(*a),
    "torch.ops": lambda op, ns: lambda *a: getattr(torch.ops, ns).add(*a),
}


@pytest.mark.parametrize("dynamic", [None, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("spelling", list(SPELLINGS), ids=str)
def test_one_node_per_call(add: Any, ns: str, spelling: str, dynamic: bool | None) -> None:
    call = SPELLINGS[spelling](add, ns)

    def fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return call(call(x, y) * 2, y, 0.5)

    x, y = torch.randn(5), torch.randn(5)
    (graph,) = _graphs(fn, x, y, dynamic=dynamic)
    nodes = _op_nodes(graph, ns)
    assert len(nodes) == 2
    assert {str(n.target) for n in nodes} <= {f"{ns}.add.default", f"{ns}.add"}


@pytest.mark.parametrize("backend", ["eager", "aot_eager"], ids=str)
@pytest.mark.parametrize("dynamic", [None, True], ids=["static", "dynamic"])
def test_backends(add: Any, backend: str, dynamic: bool | None) -> None:
    def fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return add(x.sin(), y) * 3

    compiled = torch.compile(fn, fullgraph=True, backend=backend, dynamic=dynamic)
    for n in (4, 7):
        x, y = torch.randn(n), torch.randn(n)
        assert torch.allclose(compiled(x, y), fn(x, y))


# Importing inductor runs torch.jit.script_method, which torch 2.13 itself deprecates.
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
@pytest.mark.slow  # one inductor compile: C++ codegen takes 30-80 s on 2 shared cores
def test_inductor(add: Any) -> None:
    def fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return add(x, y).cos() + 1

    compiled = torch.compile(fn, fullgraph=True, backend="inductor", dynamic=True)
    x, y = torch.randn(6), torch.randn(6)
    assert torch.allclose(compiled(x, y), fn(x, y))


def test_export(add: Any, ns: str) -> None:
    class M(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return add(x, y, 2.0) - 1

    x, y = torch.randn(3), torch.randn(3)
    ep = torch.export.export(M(), (x, y))
    assert _op_nodes(ep.graph_module, ns)
    assert torch.allclose(ep.module()(x, y), M()(x, y))


def test_fake_api_on_torch_symints(ns: str, track: list[Any]) -> None:
    """A fake impl written with customop's API runs on torch FakeTensors with SymInts."""

    @customop.custom_op(f"{ns}::cat2", mutates_args=())
    def cat2(x: customop.Tensor, y: customop.Tensor) -> customop.Tensor:
        return torch.cat([x, y])

    @cat2.register_fake
    def _(x: Any, y: Any) -> Any:
        if x.shape[1] != y.shape[1]:
            raise ValueError("columns differ")
        return customop.new_empty(x, (x.shape[0] + y.shape[0], x.shape[1]))

    track.append(cat2)
    track.append(customop.torch.register(cat2))
    fn = lambda x, y: cat2(x, y) * 2  # noqa: E731
    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager", dynamic=True)
    for rows in (2, 3):
        x, y = torch.randn(rows, 4), torch.randn(5, 4)
        assert torch.allclose(compiled(x, y), fn(x, y))

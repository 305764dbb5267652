"""Fixtures for the graph tests: a fresh dispatcher with numpy ops, and a tiny recorder.

The tensor layer (FakeTensor, SymInt) is written separately, so these tests use
local stand-ins: `Sym` for a symbolic size and `DuckArray` for a fake tensor.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from customop.dispatch import Dispatcher
from customop.library import Library, Ops
from customop.trace import Graph, Node, TensorMeta, meta_of


class Sym:
    """Stand-in for a SymInt: prints as its expression, carries no value."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


class DuckArray:
    """Stand-in for a FakeTensor: shape, dtype and device, no data."""

    def __init__(self, shape: tuple[Any, ...], dtype: Any, device: Any = "cpu") -> None:
        self.shape = shape
        self.dtype = dtype
        self.device = device


def _topk(x: np.ndarray, k: int) -> Any:
    indices = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, indices, axis=-1), indices


def _softmax(x: np.ndarray, dim: int) -> Any:
    shifted = np.exp(x - x.max(axis=dim, keepdims=True))
    return shifted / shifted.sum(axis=dim, keepdims=True)


#: schema (without the namespace) -> numpy kernel: the ops of the "pipe" namespace.
PIPE_OPS: dict[str, Any] = {
    "matmul(Tensor x, Tensor w) -> Tensor": lambda x, w: x @ w,
    "add(Tensor x, Tensor y) -> Tensor": lambda x, y: x + y,
    "add.Scalar(Tensor x, Scalar other) -> Tensor": lambda x, other: x + other,
    "relu(Tensor x) -> Tensor": lambda x: np.maximum(x, 0),
    "scale(Tensor x, *, float factor=2.0) -> Tensor": lambda x, *, factor: x * factor,
    "softmax(Tensor x, int dim=-1) -> Tensor": _softmax,
    "transpose(Tensor x) -> Tensor": lambda x: x.T,
    "sum(Tensor x, int[] dims, bool keepdim=False) -> Tensor": (
        lambda x, dims, keepdim: x.sum(axis=tuple(dims), keepdims=keepdim)
    ),
    "topk(Tensor x, int k) -> (Tensor values, Tensor indices)": _topk,
    "cast(Tensor x, ScalarType dtype) -> Tensor": lambda x, dtype: x.astype(dtype),
    "concat(Tensor[] xs, int dim=0) -> Tensor": lambda xs, dim: np.concatenate(xs, axis=dim),
    "reshape(Tensor x, SymInt[] shape) -> Tensor": lambda x, shape: x.reshape(shape),
    "split(Tensor x, int parts) -> Tensor[]": np.array_split,
    "clip(Tensor x, float? lo=None, float? hi=None) -> Tensor": np.clip,
}


@pytest.fixture
def dispatcher() -> Dispatcher:
    return Dispatcher()


@pytest.fixture
def pipe(dispatcher: Dispatcher) -> Iterator[Ops]:
    """``ops`` of a fresh dispatcher with the "pipe" namespace defined and implemented."""
    with Library("pipe", "DEF", dispatcher=dispatcher) as lib:
        for schema, kernel in PIPE_OPS.items():
            lib.define(schema)
            lib.impl(schema.partition("(")[0], kernel, "CPU")
        yield Ops(dispatcher)


class Recorder:
    """A test-only eager tracer: runs each op on real arrays and records the call.

    Values are matched to nodes by identity, as the real tracer will match its
    tracer tensors.
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.nodes: dict[int, Node | Any] = {}
        self.keep: list[Any] = []  # keep recorded values alive, so ids stay unique

    def input(self, name: str, value: Any) -> Any:
        self._remember(value, self.graph.placeholder(name, TensorMeta.from_value(value)))
        return value

    def __call__(self, op: Any, *args: Any, **kwargs: Any) -> Any:
        result = op(*args, **kwargs)
        node = self.graph.call(op, self._swap(args), self._swap(kwargs), meta_of(result))
        self._remember(result, node)
        if isinstance(result, tuple | list):
            for item, value in enumerate(result):
                self._remember(value, node[item])
        return result

    def output(self, value: Any) -> None:
        self.graph.output(self._swap(value))

    def _remember(self, value: Any, node: Any) -> None:
        self.keep.append(value)
        self.nodes[id(value)] = node

    def _swap(self, value: Any) -> Any:
        if id(value) in self.nodes:
            return self.nodes[id(value)]
        if isinstance(value, tuple | list):
            return type(value)(self._swap(v) for v in value)
        if isinstance(value, dict):
            return {k: self._swap(v) for k, v in value.items()}
        return value


@pytest.fixture
def showcase(pipe: Ops) -> Graph:
    """A small graph with one of each feature: symbolic sizes, repeated ops, keyword
    arguments, several outputs, dtype constants, lists, a dict output."""
    ops = pipe.pipe
    graph = Graph()
    x = graph.placeholder("x", TensorMeta((Sym("s0"), 3), np.float32))
    w = graph.placeholder("w", TensorMeta((3, 4), "float32"))
    h = graph.call(ops.matmul.default, (x, w), meta=TensorMeta((Sym("s0"), 4), "float32"))
    h = graph.call(ops.relu.default, (h,), meta=h.meta)
    h = graph.call(ops.scale.default, (h,), {"factor": 0.5}, meta=h.meta)
    h = graph.call(ops.relu.default, (h,), meta=h.meta)
    top = graph.call(
        ops.topk.default,
        (h, 2),
        meta=(TensorMeta((Sym("s0"), 2), "float32"), TensorMeta((Sym("s0"), 2), "int64")),
    )
    wide = graph.call(ops.cast.default, (top[0], np.float64), meta=TensorMeta(("s0", 2), "f64"))
    both = graph.call(ops.concat.default, ([wide, wide], 1), meta=TensorMeta(("s0", 4), "f64"))
    graph.output({"values": both, "indices": top[1], "hidden": h})
    return graph

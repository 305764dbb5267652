"""trace(grad(f), x): one Graph with the forward and the backward ops."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from customop import AutogradError, Graph, custom_op, empty_like, trace
from customop.autograd import grad, value_and_grad
from customop.dispatch import Dispatcher
from tests.autograd.formulas import define

X = np.array([[1.0, -2.0, 0.5], [0.3, 0.2, -0.1]])
W = np.array([[0.5, -1.0], [2.0, 0.1], [-0.3, 0.7]])


@pytest.fixture
def nn(dispatcher: Dispatcher) -> SimpleNamespace:
    return define(dispatcher)


def _loss(nn: SimpleNamespace) -> Any:
    def loss(x: Any, w: Any) -> Any:
        return nn.total(nn.softmax(nn.tanh(nn.matmul(x, w)), -1))

    return loss


def test_the_graph_holds_forward_and_backward(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    step = grad(_loss(nn), (0, 1), dispatcher=dispatcher)
    graph = trace(step, X, W, dispatcher=dispatcher)
    calls = [node.target for node in graph.nodes if node.kind.name == "CALL"]
    names = [str(getattr(target, "name", target)) for target in calls]
    assert names[:4] == ["nn::matmul", "nn::tanh", "nn::softmax", "nn::sum"]
    assert names[4] == "autograd::ones_like"  # the seed
    assert {"nn::softmax_backward", "nn::tanh_backward", "nn::transpose"} <= set(names[5:])
    expected = step(X, W)
    rerun = graph.run(X, W, dispatcher=dispatcher)
    for got, want in zip(rerun, expected, strict=True):
        np.testing.assert_allclose(got, want)


def test_the_graph_prints_saves_and_draws(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    graph = trace(grad(_loss(nn), 1, dispatcher=dispatcher), X, W, dispatcher=dispatcher)
    code = graph.code()
    assert "ops.nn.matmul.default(x, w)" in code and "ops.nn.softmax_backward" in code
    loaded = Graph.from_json(graph.to_json(), dispatcher=dispatcher)
    np.testing.assert_allclose(
        loaded.run(X, W, dispatcher=dispatcher), grad(_loss(nn), 1, dispatcher=dispatcher)(X, W)
    )
    assert "softmax_backward" in graph.to_mermaid()
    assert "softmax_backward" in graph.to_dot()


def test_value_and_grad_traces_too(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    graph = trace(value_and_grad(_loss(nn), dispatcher=dispatcher), X, W, dispatcher=dispatcher)
    value, gx = graph.run(X, W, dispatcher=dispatcher)
    want_value, want_gx = value_and_grad(_loss(nn), dispatcher=dispatcher)(X, W)
    np.testing.assert_allclose(value, want_value)
    np.testing.assert_allclose(gx, want_gx)


def test_a_numpy_backward_names_the_op(dispatcher: Dispatcher, nn: SimpleNamespace) -> None:
    @custom_op("tr::cube", mutates_args=(), dispatcher=dispatcher)
    def cube(x: np.ndarray) -> np.ndarray:
        return x**3

    cube.register_fake(lambda x: empty_like(x))
    cube.register_autograd(
        lambda ctx, g: g * 3 * np.square(ctx.x),  # plain numpy: cannot run on fakes
        setup_context=lambda ctx, inputs, output: setattr(ctx, "x", inputs[0]),
    )
    np.testing.assert_allclose(
        grad(lambda x: nn.total(cube(x)), dispatcher=dispatcher)(X), 3 * X**2
    )
    with pytest.raises(AutogradError, match=r"^trace: the backward of 'tr::cube' cannot be traced"):
        trace(grad(lambda x: nn.total(cube(x)), dispatcher=dispatcher), X, dispatcher=dispatcher)

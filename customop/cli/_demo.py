"""``customop demo``: the main job on built-in examples, in one run.

Defines ops with ``@custom_op`` (numpy kernels) on a private dispatcher, calls
them, shows a dispatch table, runs them under fake mode, and traces a small
function into a graph (printed, and drawn as Mermaid).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from customop.dispatch import Dispatcher
from customop.fake import FakeTensorMode, get_ctx
from customop.library import custom_op
from customop.tensor import empty, empty_like, install_backends
from customop.trace import trace

__all__ = ["run_demo"]


def _define(d: Dispatcher) -> tuple[Any, Any, Any]:
    @custom_op("demo::linear", mutates_args=(), dispatcher=d)
    def linear(x: np.ndarray, w: np.ndarray, *, bias: float = 0.0) -> np.ndarray:
        """x @ w + bias"""
        result: np.ndarray = x @ w + bias
        return result

    @linear.register_fake
    def _linear(x: Any, w: Any, *, bias: float = 0.0) -> Any:
        return empty((x.shape[0], w.shape[1]), dtype=x.dtype, device=x.device)

    @custom_op("demo::relu", mutates_args=(), dispatcher=d)
    def relu(x: np.ndarray) -> np.ndarray:
        result: np.ndarray = np.maximum(x, 0)
        return result

    @relu.register_fake
    def _(x: Any) -> Any:
        return empty_like(x)

    @custom_op("demo::nonzero", mutates_args=(), dispatcher=d)
    def nonzero(x: np.ndarray) -> np.ndarray:
        return np.argwhere(x)

    @nonzero.register_fake
    def _(x: Any) -> Any:
        return empty((get_ctx().new_dynamic_size(), x.ndim), dtype="int64", device=x.device)

    return linear, relu, nonzero


def run_demo() -> str:
    d = Dispatcher()
    install_backends(d)
    linear, relu, nonzero = _define(d)
    out: list[str] = []
    x = np.array([[1.0, -2.0, 3.0], [-1.0, 0.5, 2.0]], dtype=np.float32)
    w = np.full((3, 2), 0.5, dtype=np.float32)
    out += ["# 1. Three ops, defined with @custom_op from typed numpy functions", ""]
    out += [f"    {op.schema}" for op in (linear, relu, nonzero)]
    out += ["", "# 2. Calling them on numpy arrays", ""]
    hidden = relu(linear(x, w, bias=-0.5))
    out.append(f"    relu(linear(x, w, bias=-0.5)) = {hidden.tolist()}")
    out.append(f"    nonzero(hidden) = {nonzero(hidden).tolist()}")
    out += ["", "# 3. The dispatch table of demo::linear (kernels per key, and why)", ""]
    table = d.dump_table("demo::linear", kernels_only=True)
    out += [f"    {line}" for line in table.splitlines()]
    out += ["", "# 4. Under FakeTensorMode: shapes, dtypes and devices, no data", ""]
    with FakeTensorMode() as mode:
        fx = mode.from_real(x)
        fake_hidden = relu(linear(fx, mode.from_real(w)))
        found = nonzero(fake_hidden)
    out.append(f"    relu(linear(fake_x, fake_w)) -> {fake_hidden}")
    out.append(f"    nonzero(...) -> {found}   (s0: a size only the data decides)")
    out += ["", "# 5. Tracing a function into a graph", ""]

    def mlp(x: Any, w1: Any, w2: Any) -> Any:
        return linear(relu(linear(x, w1)), w2, bias=1.0)

    w2 = np.ones((2, 1), dtype=np.float32)
    graph = trace(mlp, x, w, w2, dispatcher=d)
    out += [f"    {line}" for line in graph.code().splitlines()]
    same = graph.run(x, w, w2, dispatcher=d).tolist() == mlp(x, w, w2).tolist()
    out += ["", f"    graph(x, w1, w2) == mlp(x, w1, w2): {same}", ""]
    out += ["# 6. The graph as a Mermaid diagram", ""]
    out += [
        "    Paste the lines below into https://mermaid.live to see the picture (or into a",
        "    mermaid code block of a Markdown page; graph.to_dot() gives Graphviz instead):",
        "",
        graph.to_mermaid(),
    ]
    return "\n".join(out)

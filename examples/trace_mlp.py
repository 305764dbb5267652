"""Trace a small MLP of custom ops into a graph, re-run it, and write its Mermaid diagram.

    python examples/trace_mlp.py [OUT.mmd]

The graph prints as Python-like code, runs on new inputs, round-trips
through JSON, and is written as a Mermaid flowchart (default: mlp.mmd in a
temporary folder).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from customop import Dispatcher, Graph, custom_op, empty, empty_like, trace
from customop.tensor import install_backends

d = Dispatcher()
install_backends(d)


@custom_op("mlp::linear", mutates_args=(), dispatcher=d)
def linear(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    result: np.ndarray = x @ w + b
    return result


@linear.register_fake
def _linear(x: Any, w: Any, b: Any) -> Any:
    return empty((x.shape[0], w.shape[1]), dtype=x.dtype, device=x.device)


@custom_op("mlp::relu", mutates_args=(), dispatcher=d)
def relu(x: np.ndarray) -> np.ndarray:
    result: np.ndarray = np.maximum(x, 0)
    return result


@relu.register_fake
def _relu(x: Any) -> Any:
    return empty_like(x)


def mlp(x: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
    return linear(relu(linear(x, w1, b1)), w2, b2)


def main() -> None:
    rng = np.random.default_rng(0)
    params = [rng.normal(size=s).astype(np.float32) for s in [(4, 8), (8,), (8, 2), (2,)]]
    x = rng.normal(size=(5, 4)).astype(np.float32)
    graph = trace(mlp, x, *params, dispatcher=d)
    print(graph)
    fresh = rng.normal(size=(5, 4)).astype(np.float32)
    same = np.allclose(graph.run(fresh, *params, dispatcher=d), mlp(fresh, *params))
    print("re-run on new inputs matches:", same)
    loaded = Graph.from_json(graph.to_json(), dispatcher=d)
    print("JSON round trip prints the same:", loaded.code() == graph.code())
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "mlp.mmd"
    out.write_text(graph.to_mermaid() + "\n")
    lines = len(graph.to_mermaid().splitlines())
    print(f"wrote the Mermaid diagram ({lines} lines) to {out}; paste it into https://mermaid.live")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

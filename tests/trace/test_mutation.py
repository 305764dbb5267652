"""A traced graph shows mutation: the op's own name, `# writes x`, and ordering edges."""

from __future__ import annotations

import numpy as np
import pytest

from customop import FakeTensorMode, custom_op, empty_like, trace
from customop.dispatch import Dispatcher
from customop.library import Library, Ops
from customop.tensor import install_backends
from customop.trace import Graph


@pytest.fixture
def d() -> Dispatcher:
    dispatcher = Dispatcher()
    install_backends(dispatcher)
    lib = Library("mut", "DEF", dispatcher=dispatcher)
    lib.define("add_(Tensor(a!) self, Tensor other) -> Tensor(a!)")
    lib.impl("add_", lambda self, other: np.add(self, other, out=self), "CPU")
    lib.impl("add_", lambda self, other: self, "Meta")
    lib.define("zero_all_(Tensor(a!)[] xs) -> ()")
    lib.impl("zero_all_", lambda xs: [x.fill(0) for x in xs] and None, "CPU")
    lib.impl("zero_all_", lambda xs: None, "Meta")
    dispatcher._test_lib = lib  # type: ignore[attr-defined]  # kept alive with the dispatcher
    return dispatcher


@pytest.fixture
def graph(d: Dispatcher) -> Graph:
    def fill_(x: np.ndarray, value: float) -> None:
        x[...] = value

    def relu(x: np.ndarray) -> np.ndarray:
        return np.maximum(x, 0)

    fill = custom_op("mut::fill_", fill_, mutates_args=["x"], dispatcher=d)
    rectify = custom_op("mut::relu", relu, mutates_args=(), dispatcher=d)
    rectify.register_fake(lambda x: empty_like(x))

    def f(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        before = rectify(x)
        fill(x, 1.0)
        fill(x, 2.0)
        return rectify(x), before

    return trace(f, np.zeros(2), dispatcher=d)


def test_printed_code_keeps_the_name_and_comments_the_write(graph: Graph) -> None:
    assert str(graph) == (
        "def forward(x: f64[2]):\n"
        "    relu = ops.mut.relu.default(x)           # f64[2]\n"
        "    fill_ = ops.mut.fill_.default(x, 1.0)    # writes x\n"
        "    fill__1 = ops.mut.fill_.default(x, 2.0)  # writes x\n"
        "    relu_1 = ops.mut.relu.default(x)         # f64[2]\n"
        "    return (relu_1, relu)"
    )


def test_mermaid_orders_later_readers_after_the_write(graph: Graph) -> None:
    lines = graph.to_mermaid().splitlines()
    assert '    n2["mut::fill_"]' in lines
    ordering = [line for line in lines if "-.->" in line]
    assert ordering == ['    n2 -.->|"writes x"| n3', '    n3 -.->|"writes x"| n4']


def test_dot_orders_later_readers_after_the_write(graph: Graph) -> None:
    ordering = [line for line in graph.to_dot().splitlines() if "dashed" in line]
    assert ordering == [
        '    n2 -> n3 [style=dashed, label="writes x"];',
        '    n3 -> n4 [style=dashed, label="writes x"];',
    ]


def test_a_reader_before_the_write_gets_no_ordering_edge(graph: Graph) -> None:
    ordering = [line for line in graph.to_mermaid().splitlines() if "-.->" in line]
    assert not any(line.endswith(" n1") for line in ordering)


def test_a_written_alias_result_and_a_list_of_written_tensors(d: Dispatcher) -> None:
    ops = Ops(d)

    def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        out = ops.mut.add_(x, y)
        ops.mut.zero_all_([x, y])
        return ops.mut.add_(out, y)

    with FakeTensorMode() as mode:
        graph = trace(f, mode.from_real(np.zeros(3)), mode.from_real(np.ones(3)), dispatcher=d)
    code = str(graph).splitlines()
    assert code[1].endswith("# f64[3]; writes x") and code[1].lstrip().startswith("add_ = ")
    # The tracer follows the alias: after add_(x, y), x's value is node add_.
    assert code[2].endswith("# writes add_, y") and "zero_all_ = " in code[2]
    ordering = [line for line in graph.to_dot().splitlines() if "dashed" in line]
    assert ordering == [
        '    n3 -> n4 [style=dashed, label="writes add_"];',
        '    n3 -> n4 [style=dashed, label="writes y"];',
    ]


def test_written_values_reach_every_later_reader(d: Dispatcher) -> None:
    ops = Ops(d)

    def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        ops.mut.zero_all_([x, y])
        return ops.mut.add_(x, y)

    with FakeTensorMode() as mode:
        graph = trace(f, mode.from_real(np.zeros(3)), mode.from_real(np.ones(3)), dispatcher=d)
    ordering = [line for line in graph.to_dot().splitlines() if "dashed" in line]
    assert ordering == [
        '    n2 -> n3 [style=dashed, label="writes x"];',
        '    n2 -> n3 [style=dashed, label="writes y"];',
    ]

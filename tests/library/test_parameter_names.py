"""Any identifier the schema accepts is a parameter name, even ones the call machinery uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from customop import custom_op, empty_like, trace
from customop.autograd import grad
from customop.dispatch import Dispatcher, DispatchMode
from customop.library import Ops
from customop.tensor import install_backends

# Names of the call machinery's own parameters and locals: `self` of the call
# objects, `op` and `keyset` of boxed kernels, the generated code's `_co_` locals.
NAMES = ["self", "cls", "op", "keyset", "fn", "args", "kwargs", "values", "_co_site", "_co_v0"]


def _define(dispatcher: Dispatcher, name: str, *, keyword: bool) -> Any:
    star = "*, " if keyword else ""
    namespace: dict[str, Any] = {"np": np, "empty_like": empty_like}
    exec(  # a parameter named by the test: only exec can write the defs
        f"def body(x: np.ndarray, {star}{name}: float = 1.0) -> np.ndarray:\n"
        f"    return x * {name}\n"
        f"def fake(x, {star}{name}=1.0):\n"
        f"    return empty_like(x)\n",
        namespace,
    )
    op = custom_op(
        f"pn::{name.strip('_')}", namespace["body"], mutates_args=(), dispatcher=dispatcher
    )
    op.register_fake(namespace["fake"])
    scale = 3.0
    op.register_autograd(
        lambda ctx, g: (g * scale, None),
        setup_context=lambda ctx, inputs, output: None,
    )
    return op


def _spellings(op: Any, dispatcher: Dispatcher, name: str) -> list[Callable[..., Any]]:
    handle = dispatcher.find_schema_or_throw(f"pn::{name.strip('_')}")
    packet = getattr(Ops(dispatcher).pn, name.strip("_"))
    return [op, op, op.op, packet, packet.default, handle]


@pytest.mark.parametrize("keyword", [True, False], ids=["keyword-only", "positional"])
@pytest.mark.parametrize("name", NAMES)
def test_every_spelling_calls_with_the_name(name: str, keyword: bool) -> None:
    dispatcher = Dispatcher()
    install_backends(dispatcher)
    op = _define(dispatcher, name, keyword=keyword)
    x = np.ones(2)
    for call in _spellings(op, dispatcher, name):
        np.testing.assert_array_equal(call(x, **{name: 3.0}), [3.0, 3.0])


@pytest.mark.parametrize("name", NAMES)
def test_boxed_kernels_pass_the_name_through(name: str) -> None:
    dispatcher = Dispatcher()
    install_backends(dispatcher)
    op = _define(dispatcher, name, keyword=True)
    x = np.ones(2)
    # The Tracer, autograd and Python keys run boxed kernels: (op, keyset, *args, **kwargs).
    graph = trace(lambda x: op(x, **{name: 3.0}), x, dispatcher=dispatcher)
    np.testing.assert_array_equal(graph.run(x, dispatcher=dispatcher), [3.0, 3.0])
    total = custom_op("pn::total", lambda v: np.asarray(v.sum()), mutates_args=(),
                      schema="(Tensor v) -> Tensor", dispatcher=dispatcher)  # fmt: skip
    total.register_autograd(lambda ctx, g: np.broadcast_to(g, (2,)).copy())
    np.testing.assert_array_equal(
        grad(lambda x: total(op(x, **{name: 3.0})), dispatcher=dispatcher)(x), [3.0, 3.0]
    )

    class Log(DispatchMode):
        def __dispatch__(self, op: Any, types: Any, args: Any, kwargs: Any) -> Any:
            return op(*args, **kwargs)

    with Log():
        np.testing.assert_array_equal(op(x, **{name: 3.0}), [3.0, 3.0])

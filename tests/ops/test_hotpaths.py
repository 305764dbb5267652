"""What keeps hot paths hot: cached ops attributes, Literal choices on the fast path,
local-key blocks that leave call caches alone, bound overloads made without classes."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pytest

import customop
from customop.dispatch import Dispatcher, DispatchKey, include_keys
from customop.library import Ops
from customop.ops._overload import OpOverload
from customop.tensor import install_backends


def test_ops_attributes_are_cached_and_dropped_with_the_op(
    dispatcher: Dispatcher, ops: Ops
) -> None:
    op = customop.custom_op(
        "hot::f", lambda x: x, mutates_args=(), schema="(Tensor x) -> Tensor", dispatcher=dispatcher
    )
    packet = ops.hot.f
    assert vars(ops)["hot"] is ops.hot and vars(ops.hot)["f"] is packet  # plain attribute reads
    op.remove()
    assert "hot" not in vars(ops)
    with pytest.raises(AttributeError, match="no namespace 'hot'"):
        ops.hot  # noqa: B018


def test_ops_names_shadow_no_method(dispatcher: Dispatcher, ops: Ops) -> None:
    # `names` is OpNamespace's own method; caching the op under it would hide it.
    dispatcher.register_def("hot::names(Tensor x) -> Tensor")
    assert callable(ops.hot.names) and ops.hot.names() == ["names"]
    assert "names" not in vars(ops.hot)


def test_ops_see_overloads_come_and_go(dispatcher: Dispatcher, ops: Ops) -> None:
    first = dispatcher.register_def("hot::g(Tensor x) -> Tensor")
    assert ops.hot.g.overloads() == ["default"]
    second = dispatcher.register_def("hot::g.int(Tensor x, int n) -> Tensor")
    assert ops.hot.g.overloads() == ["default", "int"]
    first.remove()
    assert ops.hot.g.overloads() == ["int"]
    second.remove()
    assert ops.namespaces() == []


@pytest.mark.parametrize("call", ["definition", "packet"])
def test_literal_choices_are_checked_after_the_cache_fills(
    dispatcher: Dispatcher, ops: Ops, call: str
) -> None:
    @customop.custom_op("hot::pick", mutates_args=(), dispatcher=dispatcher)
    def pick(x: np.ndarray, mode: Literal["sum", "mean"]) -> np.ndarray:
        return x

    fn = pick if call == "definition" else ops.hot.pick
    x = np.ones(2)
    for _ in range(3):  # the first call fills the cache; the others take the fast path
        assert fn(x, "sum") is x
    assert pick.op._site is not None and pick.op._site.fast
    with pytest.raises(TypeError, match="'max'"):
        fn(x, "max")


def test_calls_keep_their_cache_across_fake_mode_blocks(dispatcher: Dispatcher) -> None:
    op = customop.custom_op(
        "hot::k", lambda x: x, mutates_args=(), schema="(Tensor x) -> Tensor", dispatcher=dispatcher
    )
    x = np.ones(1)
    op(x)
    site = op.op._site
    assert site is not None
    entry = site.cache
    with include_keys(DispatchKey.Fake):
        pass
    assert site.cache is entry
    assert op(x) is x


def test_graph_reruns_keep_bound_ops_across_registrations(dispatcher: Dispatcher) -> None:
    op = customop.custom_op(
        "hot::t",
        lambda x: x * 2,
        mutates_args=(),
        schema="(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )
    op.register_fake(lambda x: customop.empty_like(x))
    install_backends(dispatcher)
    graph = customop.trace(lambda x: op(op(x)), np.ones(2), dispatcher=dispatcher)
    assert graph.run(np.ones(2)).tolist() == [4.0, 4.0]
    plan = graph._plan
    assert plan is not None
    dispatcher.register_def("hot::other(Tensor x) -> Tensor")  # a registration elsewhere
    assert graph.run(np.ones(2)).tolist() == [4.0, 4.0]
    assert graph._plan is not plan
    assert [s.fn for s in graph._plan.steps] == [s.fn for s in plan.steps]


def test_binding_makes_no_class_until_the_overload_is_called(
    dispatcher: Dispatcher, ops: Ops
) -> None:
    dispatcher.register_def("hot::b(Tensor x) -> Tensor", kernels={"CPU": lambda x: x})
    overload = ops.hot.b.default
    assert type(overload) is OpOverload
    x = np.ones(1)
    assert overload(x) is x and overload(x) is x
    assert type(overload) is not OpOverload and isinstance(overload, OpOverload)


def test_cached_boxed_fallback_sees_registrations_made_since() -> None:
    """The fast path caches the fallback with its key set; a registration empties
    that cache, so the redispatch reaches the kernel registered since."""
    dispatcher = Dispatcher(autograd_fallthrough=False)
    op = customop.custom_op(
        "hot::box",
        lambda x: "first",
        mutates_args=(),
        schema="(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )
    seen: list[str] = []

    def fallback(handle: Any, keyset: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(keyset.highest().name)
        return handle.redispatch(keyset.below(DispatchKey.AutogradCPU), *args, **kwargs)

    dispatcher.register_fallback(DispatchKey.AutogradCPU, fallback)
    x = np.ones(1)
    assert [op(x), op(x), op(x)] == ["first"] * 3
    site = op.op._site
    assert (
        site is not None and site.cache[site.kernel_index].func is fallback
    )  # the fast path's entry
    second = op.register_kernel("cpu", lambda x: "second")
    assert [op(x), op(x)] == ["second"] * 2
    customop.handle_of(second).remove()
    assert op(x) == "first"
    assert seen == ["AutogradCPU"] * 6

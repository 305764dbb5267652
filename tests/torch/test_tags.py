"""Tagged ops in torch: torch sees the tags and aliased schema, and the generated fake serves it."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import customop
import customop.torch

Tensor = torch.Tensor


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> None:
    torch._dynamo.reset()


def _add_(ns: str, track: list[Any]) -> Any:
    @customop.custom_op(f"{ns}::add_", mutates_args={"x"}, tags=torch.Tag.inplace)
    def add_(x: Tensor, y: Tensor) -> Tensor:
        x.add_(y)
        return x

    track += [add_, customop.torch.register(add_)]
    return add_


def test_torch_gets_the_tag_and_the_aliased_schema(ns: str, track: list[Any]) -> None:
    _add_(ns, track)
    op = getattr(torch.ops, ns).add_.default
    assert torch.Tag.inplace in op.tags
    assert str(op._schema) == f"{ns}::add_(Tensor(a0!) x, Tensor y) -> Tensor(a0!)"


def test_the_generated_fake_serves_torchs_fake_mode(ns: str, track: list[Any]) -> None:
    _add_(ns, track)
    op = getattr(torch.ops, ns).add_.default
    with torch._subclasses.fake_tensor.FakeTensorMode():
        x = torch.empty(3)
        assert op(x, torch.empty(3)) is x


def test_torchs_opcheck_passes_a_bridged_inplace_op(ns: str, track: list[Any]) -> None:
    add_ = _add_(ns, track)
    result = torch.library.opcheck(add_, (torch.randn(3), torch.randn(3)))
    assert set(result.values()) == {"SUCCESS"}


def test_customops_opcheck_passes_it_on_torch_tensors_unbridged(dispatcher: Any) -> None:
    @customop.custom_op("tgu::add_", mutates_args={"x"}, tags="inplace", dispatcher=dispatcher)
    def add_(x: Tensor, y: Tensor) -> Tensor:
        x.add_(y)
        return x

    result = customop.opcheck(add_, (torch.randn(3), torch.randn(3)))
    assert set(result.values()) == {"SUCCESS"}


def test_a_compiled_call_mutates_and_returns_the_argument(ns: str, track: list[Any]) -> None:
    add_ = _add_(ns, track)
    x, y = torch.zeros(3), torch.ones(3)
    result = torch.compile(lambda a, b: add_(a, b), backend="aot_eager", fullgraph=True)(x, y)
    torch.testing.assert_close(x, torch.ones(3))
    torch.testing.assert_close(result, torch.ones(3))

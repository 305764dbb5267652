"""torch's tests of ``tags=torch.Tag.inplace`` / ``torch.Tag.out``, ported, bridged.

From ``test/test_custom_ops.py`` (``TestCustomOpAPI``, torch 2.13): the tests
that use torch's fake mode, compiler or autograd, on a customop op defined in
torch with ``customop.torch.register`` (``docs/migration.md``: ``custom_op(...)``
then ``customop.torch.register(f)``). ``f._opoverload`` is the torch op,
``torch.ops.<ns>.<name>.default``; the namespace is the test's own (torch's
registry is process-wide). unittest's assertions are pytest's; what they
assert is torch's. The same tests on customop alone are in
``tests/library/test_ported_torch_tags.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

import customop
import customop.torch

Tensor = torch.Tensor
FakeTensorMode = torch._subclasses.fake_tensor.FakeTensorMode


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> None:
    torch._dynamo.reset()


def _bridged(track: list[Any], op: Any) -> Any:
    """Register ``op`` in torch (removed after the test); return torch's OpOverload."""
    track += [op, customop.torch.register(op)]
    ns, name = op.name.split("::")
    return getattr(getattr(torch.ops, ns), name).default


def test_custom_op_inplace_tag(ns: str, track: list[Any]) -> None:
    @customop.custom_op(f"{ns}::inplace_tag", mutates_args={"x"}, tags=torch.Tag.inplace)
    def f(x: Tensor, y: Tensor) -> Tensor:
        x.add_(y)
        return x

    opoverload = _bridged(track, f)
    assert torch.Tag.inplace in opoverload.tags
    schema = opoverload._schema
    assert schema.arguments[0].alias_info.is_write
    assert schema.returns[0].alias_info.is_write
    assert schema.arguments[0].alias_info.before_set == schema.returns[0].alias_info.before_set

    x = torch.randn(3)
    y = torch.randn(3)
    expected = x + y
    result = f(x, y)
    assert result is x
    torch.testing.assert_close(x, expected)

    with FakeTensorMode():
        fake_x = torch.randn(3)
        fake_y = torch.randn(3)
        fake_result = f(fake_x, fake_y)
        assert fake_result is fake_x


def test_custom_op_inplace_tag_autograd(ns: str, track: list[Any]) -> None:
    @customop.custom_op(f"{ns}::inplace_tag_autograd", mutates_args={"x"}, tags=torch.Tag.inplace)
    def f(x: Tensor, y: Tensor) -> Tensor:
        x.add_(y)
        return x

    _bridged(track, f)
    x = torch.randn(3, requires_grad=True)
    y = torch.randn(3)
    expected = x.detach() + y
    result = f(x, y)
    torch.testing.assert_close(x, expected)
    assert result.requires_grad
    with pytest.raises(RuntimeError, match="no autograd formula"):
        result.sum().backward()


def test_custom_op_inplace_tag_register_fake_warns(ns: str, track: list[Any]) -> None:
    @customop.custom_op(
        f"{ns}::inplace_tag_register_fake_warns", mutates_args={"x"}, tags=torch.Tag.inplace
    )
    def f(x: Tensor) -> Tensor:
        return x

    _bridged(track, f)
    with pytest.warns(UserWarning, match=r"torch\.Tag\.inplace"):

        @f.register_fake
        def _(x: Any) -> Any:
            return x.clone()

    with FakeTensorMode():
        fake_x = torch.randn(3)
        assert f(fake_x) is not fake_x


# Inductor imports torch.jit code that warns of its own deprecation (torch's, not ours).
_INDUCTOR_WARNS = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"
)
_COMPILE = pytest.mark.parametrize(
    ("backend", "fullgraph"),
    [
        pytest.param("eager", False, id="eager"),
        pytest.param("eager", True, id="eager_fullgraph"),
        pytest.param("inductor", True, id="inductor_fullgraph", marks=_INDUCTOR_WARNS),
    ],
)


@_COMPILE
def test_custom_op_inplace_tag_compile(
    ns: str, track: list[Any], backend: str, fullgraph: bool
) -> None:
    @customop.custom_op(f"{ns}::inplace_tag_compile", mutates_args={"x"}, tags=torch.Tag.inplace)
    def f(x: Tensor, y: Tensor) -> Tensor:
        x.add_(y)
        return x

    _bridged(track, f)

    def fn(x: Tensor, y: Tensor) -> Tensor:
        return f(x, y)

    x = torch.randn(3)
    y = torch.randn(3)
    expected = x + y
    result = torch.compile(fn, backend=backend, fullgraph=fullgraph)(x, y)
    assert result is x
    torch.testing.assert_close(x, expected)


def test_custom_op_inplace_tag_manual_schema(ns: str, track: list[Any]) -> None:
    @customop.custom_op(
        f"{ns}::inplace_tag_manual_schema",
        mutates_args={"x"},
        schema="(Tensor(a!) x, Tensor y) -> Tensor(a!)",
        tags=torch.Tag.inplace,
    )
    def f(x: Any, y: Any) -> Any:
        x.add_(y)
        return x

    opoverload = _bridged(track, f)
    assert torch.Tag.inplace in opoverload.tags
    schema = opoverload._schema
    assert schema.arguments[0].alias_info.is_write
    assert schema.returns[0].alias_info.is_write
    assert schema.arguments[0].alias_info.before_set == schema.returns[0].alias_info.before_set

    x = torch.randn(3)
    y = torch.randn(3)
    expected = x + y
    result = f(x, y)
    assert result is x
    torch.testing.assert_close(x, expected)

    with FakeTensorMode():
        fake_x = torch.randn(3)
        fake_y = torch.randn(3)
        assert f(fake_x, fake_y) is fake_x


def test_custom_op_out_tag(ns: str, track: list[Any]) -> None:
    @customop.custom_op(f"{ns}::out_tag", mutates_args={"out"}, tags=torch.Tag.out)
    def f(x: Tensor, y: Tensor, *, out: Tensor) -> Tensor:
        out.copy_(x + y)
        return out

    opoverload = _bridged(track, f)
    assert torch.Tag.out in opoverload.tags
    schema = opoverload._schema
    assert schema.arguments[2].kwarg_only
    assert schema.arguments[2].alias_info.is_write
    assert schema.returns[0].alias_info.is_write
    assert schema.arguments[2].alias_info.before_set == schema.returns[0].alias_info.before_set

    x = torch.randn(3)
    y = torch.randn(3)
    out = torch.empty_like(x)
    result = f(x, y, out=out)
    assert result is out
    torch.testing.assert_close(out, x + y)

    with FakeTensorMode():
        fake_x = torch.randn(3)
        fake_y = torch.randn(3)
        fake_out = torch.empty_like(fake_x)
        fake_result = f(fake_x, fake_y, out=fake_out)
        assert fake_result is fake_out


@_COMPILE
def test_custom_op_out_tag_compile(
    ns: str, track: list[Any], backend: str, fullgraph: bool
) -> None:
    @customop.custom_op(f"{ns}::out_tag_compile", mutates_args={"out"}, tags=torch.Tag.out)
    def f(x: Tensor, y: Tensor, *, out: Tensor) -> Tensor:
        out.copy_(x + y)
        return out

    _bridged(track, f)

    def fn(x: Tensor, y: Tensor, out: Tensor) -> Tensor:
        return f(x, y, out=out)

    x = torch.randn(3)
    y = torch.randn(3)
    out = torch.empty_like(x)
    expected = x + y
    result = torch.compile(fn, backend=backend, fullgraph=fullgraph)(x, y, out)
    if backend == "eager":
        assert result is out
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(result, expected)


def test_custom_op_out_tag_multiple_returns(ns: str, track: list[Any]) -> None:
    @customop.custom_op(
        f"{ns}::out_tag_multiple_returns", mutates_args={"add_out", "mul_out"}, tags=torch.Tag.out
    )
    def f(x: Tensor, y: Tensor, *, add_out: Tensor, mul_out: Tensor) -> tuple[Tensor, Tensor]:
        add_out.copy_(x + y)
        mul_out.copy_(x * y)
        return add_out, mul_out

    schema = _bridged(track, f)._schema
    out_args = schema.arguments[2:]
    assert all(arg.kwarg_only for arg in out_args)
    assert len(schema.returns) == 2
    for arg, ret in zip(out_args, schema.returns, strict=True):
        assert arg.alias_info.is_write
        assert ret.alias_info.is_write
        assert arg.alias_info.before_set == ret.alias_info.before_set

    x = torch.randn(3)
    y = torch.randn(3)
    add_out = torch.empty_like(x)
    mul_out = torch.empty_like(x)
    result = f(x, y, add_out=add_out, mul_out=mul_out)
    assert result[0] is add_out
    assert result[1] is mul_out
    torch.testing.assert_close(add_out, x + y)
    torch.testing.assert_close(mul_out, x * y)

    with FakeTensorMode():
        fake_x = torch.randn(3)
        fake_y = torch.randn(3)
        fake_add_out = torch.empty_like(fake_x)
        fake_mul_out = torch.empty_like(fake_x)
        fake_result = f(fake_x, fake_y, add_out=fake_add_out, mul_out=fake_mul_out)
        assert fake_result[0] is fake_add_out
        assert fake_result[1] is fake_mul_out


def test_custom_op_out_tag_autograd(ns: str, track: list[Any]) -> None:
    @customop.custom_op(f"{ns}::out_tag_autograd", mutates_args={"out"}, tags=torch.Tag.out)
    def f(x: Tensor, *, out: Tensor) -> Tensor:
        out.copy_(x.sin())
        return out

    _bridged(track, f)
    error_msg = r"functions with out=\.\.\. arguments don't support automatic differentiation"
    with pytest.raises(RuntimeError, match=error_msg):
        f(torch.randn(3, requires_grad=True), out=torch.empty(3))

    with pytest.raises(RuntimeError, match=error_msg):
        f(torch.randn(3), out=torch.empty(3, requires_grad=True))

    x = torch.randn(3, requires_grad=True)
    out = torch.empty(3, requires_grad=True)
    with torch.no_grad():
        result = f(x, out=out)
    assert result is out
    assert out.requires_grad
    assert out.grad_fn is None
    torch.testing.assert_close(out, x.sin())


def test_custom_op_out_tag_register_fake_warns(ns: str, track: list[Any]) -> None:
    @customop.custom_op(
        f"{ns}::out_tag_register_fake_warns", mutates_args={"out"}, tags=torch.Tag.out
    )
    def f(x: Tensor, *, out: Tensor) -> Tensor:
        out.copy_(x)
        return out

    _bridged(track, f)
    with pytest.warns(UserWarning, match=r"torch\.Tag\.out"):

        @f.register_fake
        def _(x: Any, *, out: Any) -> Any:
            return out.clone()

    with FakeTensorMode():
        fake_x = torch.randn(3)
        fake_out = torch.empty_like(fake_x)
        assert f(fake_x, out=fake_out) is not fake_out


def test_custom_op_register_fake_ordinary_op(ns: str, track: list[Any]) -> None:
    @customop.custom_op(f"{ns}::register_fake_ordinary_op", mutates_args=())
    def f(x: Tensor) -> Tensor:
        return x.clone()

    called = False

    @f.register_fake
    def _(x: Any) -> Any:
        nonlocal called
        called = True
        return x.new_empty(x.shape)

    _bridged(track, f)
    with FakeTensorMode():
        fake_x = torch.randn(3)
        fake_result = f(fake_x)
        assert fake_result is not fake_x
    assert called


def test_custom_op_out_tag_manual_schema(ns: str, track: list[Any]) -> None:
    @customop.custom_op(
        f"{ns}::out_tag_manual_schema",
        mutates_args={"out"},
        schema="(Tensor x, Tensor y, *, Tensor(a!) out) -> Tensor(a!)",
        tags=torch.Tag.out,
    )
    def f(x: Any, y: Any, *, out: Any) -> Any:
        out.copy_(x + y)
        return out

    opoverload = _bridged(track, f)
    assert torch.Tag.out in opoverload.tags
    schema = opoverload._schema
    assert schema.arguments[2].kwarg_only
    assert schema.arguments[2].alias_info.is_write
    assert schema.returns[0].alias_info.is_write
    assert schema.arguments[2].alias_info.before_set == schema.returns[0].alias_info.before_set

    x = torch.randn(3)
    y = torch.randn(3)
    out = torch.empty_like(x)
    result = f(x, y, out=out)
    assert result is out
    torch.testing.assert_close(out, x + y)

    with FakeTensorMode():
        fake_x = torch.randn(3)
        fake_y = torch.randn(3)
        fake_out = torch.empty_like(fake_x)
        assert f(fake_x, fake_y, out=fake_out) is fake_out

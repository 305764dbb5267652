"""torch's tests of ``tags=torch.Tag.inplace`` / ``torch.Tag.out`` on ``custom_op``, ported.

From ``test/test_custom_ops.py`` (``TestCustomOpAPI``, torch 2.13), on
customop alone (no ``customop.torch.register``), on torch tensors. The
spelling is ported by ``docs/migration.md``: ``torch.library`` is
``customop``, ``f._opoverload._schema`` is ``f.schema``, ``f._opoverload.tags``
is ``f.op.handle.tags`` (tags as strings), torch's ``FakeTensorMode`` is
customop's (a fake comes from ``mode.from_real``), ``register_autograd`` has
no ``lib=``, and each op lives in a fresh dispatcher. unittest's assertions
are pytest's; what they assert is torch's. The tests that need torch's
compiler, autograd or fake mode run bridged in ``tests/torch/test_ported_tags.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import customop  # noqa: E402
from customop.dispatch import Dispatcher  # noqa: E402

Tensor = torch.Tensor
Optional = __import__("typing").Optional
List = list


def test_custom_op_inplace_out_tags_mutually_exclusive(d: Dispatcher) -> None:
    def f(x: Tensor, *, out: Tensor) -> Tensor:
        return out

    with pytest.raises(AssertionError, match="mutually exclusive"):
        customop.custom_op(
            "_torch_testing::inplace_out_tags_mutually_exclusive",
            f,
            mutates_args={"x", "out"},
            tags=[torch.Tag.inplace, torch.Tag.out],
            dispatcher=d,
        )


def test_custom_op_inplace_tag(d: Dispatcher) -> None:
    @customop.custom_op(
        "_torch_testing::inplace_tag", mutates_args={"x"}, tags=torch.Tag.inplace, dispatcher=d
    )
    def f(x: Tensor, y: Tensor) -> Tensor:
        x.add_(y)
        return x

    assert "inplace" in f.op.handle.tags
    schema = f.schema
    assert schema.arguments[0].alias_info.is_write
    assert schema.returns[0].alias_info.is_write
    assert schema.arguments[0].alias_info.before_set == schema.returns[0].alias_info.before_set

    x = torch.randn(3)
    y = torch.randn(3)
    expected = x + y
    result = f(x, y)
    assert result is x
    torch.testing.assert_close(x, expected)

    with customop.FakeTensorMode() as mode:
        fake_x = mode.from_real(torch.randn(3))
        fake_y = mode.from_real(torch.randn(3))
        fake_result = f(fake_x, fake_y)
        assert fake_result is fake_x


def test_custom_op_inplace_tag_returns_wrong_tensor(d: Dispatcher) -> None:
    @customop.custom_op(
        "_torch_testing::inplace_tag_returns_wrong_tensor",
        mutates_args={"x"},
        tags=torch.Tag.inplace,
        dispatcher=d,
    )
    def f(x: Tensor, y: Tensor) -> Tensor:
        x.add_(y)
        return y

    with pytest.raises(RuntimeError, match="must return its first argument"):
        f(torch.randn(3), torch.randn(3))


def test_custom_op_inplace_tag_mutates_args_iterable(d: Dispatcher) -> None:
    def mutates_args() -> Any:
        yield "x"

    @customop.custom_op(
        "_torch_testing::inplace_tag_mutates_args_iterable",
        mutates_args=mutates_args(),
        tags=torch.Tag.inplace,
        dispatcher=d,
    )
    def f(x: Tensor) -> Tensor:
        return x

    schema = f.schema
    assert schema.arguments[0].alias_info.is_write
    assert schema.returns[0].alias_info.is_write
    assert schema.arguments[0].alias_info.before_set == schema.returns[0].alias_info.before_set

    x = torch.randn(3)
    assert f(x) is x


def test_custom_op_inplace_tag_register_fake_warns(d: Dispatcher) -> None:
    @customop.custom_op(
        "_torch_testing::inplace_tag_register_fake_warns",
        mutates_args={"x"},
        tags=torch.Tag.inplace,
        dispatcher=d,
    )
    def f(x: Tensor) -> Tensor:
        return x

    with pytest.warns(UserWarning, match="torch.Tag.inplace"):

        @f.register_fake
        def _(x: Any) -> Any:
            return x.clone()

    with customop.FakeTensorMode() as mode:
        fake_x = mode.from_real(torch.randn(3))
        assert f(fake_x) is not fake_x


def test_custom_op_inplace_tag_no_positional_arg(d: Dispatcher) -> None:
    def f(*, x: Tensor) -> Tensor:
        return x

    with pytest.raises(ValueError, match="torch.Tag.inplace"):  # noqa: RUF043 -- torch's regex
        customop.custom_op(
            "_torch_testing::inplace_tag_no_positional_arg",
            f,
            mutates_args={"x"},
            tags=torch.Tag.inplace,
            dispatcher=d,
        )


def test_custom_op_inplace_tag_first_arg_not_tensor(d: Dispatcher) -> None:
    def f(x: int, y: Tensor) -> Tensor:
        return y

    with pytest.raises(ValueError, match="first positional argument"):
        customop.custom_op(
            "_torch_testing::inplace_tag_first_arg_not_tensor",
            f,
            mutates_args={"y"},
            tags=torch.Tag.inplace,
            dispatcher=d,
        )


def test_custom_op_inplace_tag_mutates_non_first_arg(d: Dispatcher) -> None:
    def f(x: Tensor, y: Tensor) -> Tensor:
        return y

    with pytest.raises(ValueError, match="mutates_args"):
        customop.custom_op(
            "_torch_testing::inplace_tag_mutates_non_first_arg",
            f,
            mutates_args={"y"},
            tags=torch.Tag.inplace,
            dispatcher=d,
        )


def test_custom_op_inplace_tag_return_none(d: Dispatcher) -> None:
    def f(x: Tensor) -> None:
        pass

    with pytest.raises(ValueError, match="return annotation"):
        customop.custom_op(
            "_torch_testing::inplace_tag_return_none",
            f,
            mutates_args={"x"},
            tags=torch.Tag.inplace,
            dispatcher=d,
        )


def test_custom_op_inplace_tag_multiple_returns(d: Dispatcher) -> None:
    def f(x: Tensor) -> tuple[Tensor, Tensor]:
        return x, x

    with pytest.raises(ValueError, match="return annotation"):
        customop.custom_op(
            "_torch_testing::inplace_tag_multiple_returns",
            f,
            mutates_args={"x"},
            tags=torch.Tag.inplace,
            dispatcher=d,
        )


def test_custom_op_inplace_tag_manual_schema(d: Dispatcher) -> None:
    @customop.custom_op(
        "_torch_testing::inplace_tag_manual_schema",
        mutates_args={"x"},
        schema="(Tensor(a!) x, Tensor y) -> Tensor(a!)",
        tags=torch.Tag.inplace,
        dispatcher=d,
    )
    def f(x: Any, y: Any) -> Any:
        x.add_(y)
        return x

    assert "inplace" in f.op.handle.tags
    schema = f.schema
    assert schema.arguments[0].alias_info.is_write
    assert schema.returns[0].alias_info.is_write
    assert schema.arguments[0].alias_info.before_set == schema.returns[0].alias_info.before_set

    x = torch.randn(3)
    y = torch.randn(3)
    expected = x + y
    result = f(x, y)
    assert result is x
    torch.testing.assert_close(x, expected)

    with customop.FakeTensorMode() as mode:
        fake_x = mode.from_real(torch.randn(3))
        fake_y = mode.from_real(torch.randn(3))
        assert f(fake_x, fake_y) is fake_x


def test_custom_op_inplace_tag_bad_manual_schema(d: Dispatcher) -> None:
    with pytest.raises(ValueError, match="return must alias"):

        @customop.custom_op(
            "_torch_testing::inplace_tag_bad_manual_schema",
            mutates_args={"x"},
            schema="(Tensor(a!) x) -> Tensor",
            tags=torch.Tag.inplace,
            dispatcher=d,
        )
        def f(x: Any) -> Any:
            return x


def test_custom_op_out_tag(d: Dispatcher) -> None:
    @customop.custom_op(
        "_torch_testing::out_tag", mutates_args={"out"}, tags=torch.Tag.out, dispatcher=d
    )
    def f(x: Tensor, y: Tensor, *, out: Tensor) -> Tensor:
        out.copy_(x + y)
        return out

    assert "out" in f.op.handle.tags
    schema = f.schema
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

    with customop.FakeTensorMode() as mode:
        fake_x = mode.from_real(torch.randn(3))
        fake_y = mode.from_real(torch.randn(3))
        fake_out = torch.empty_like(fake_x)
        fake_result = f(fake_x, fake_y, out=fake_out)
        assert fake_result is fake_out


def test_custom_op_out_tag_multiple_returns(d: Dispatcher) -> None:
    @customop.custom_op(
        "_torch_testing::out_tag_multiple_returns",
        mutates_args={"add_out", "mul_out"},
        tags=torch.Tag.out,
        dispatcher=d,
    )
    def f(x: Tensor, y: Tensor, *, add_out: Tensor, mul_out: Tensor) -> tuple[Tensor, Tensor]:
        add_out.copy_(x + y)
        mul_out.copy_(x * y)
        return add_out, mul_out

    schema = f.schema
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

    with customop.FakeTensorMode() as mode:
        fake_x = mode.from_real(torch.randn(3))
        fake_y = mode.from_real(torch.randn(3))
        fake_add_out = torch.empty_like(fake_x)
        fake_mul_out = torch.empty_like(fake_x)
        fake_result = f(fake_x, fake_y, add_out=fake_add_out, mul_out=fake_mul_out)
        assert fake_result[0] is fake_add_out
        assert fake_result[1] is fake_mul_out


def test_custom_op_out_tag_returns_wrong_tensor(d: Dispatcher) -> None:
    @customop.custom_op(
        "_torch_testing::out_tag_returns_wrong_tensor",
        mutates_args={"out"},
        tags=torch.Tag.out,
        dispatcher=d,
    )
    def f(x: Tensor, *, out: Tensor) -> Tensor:
        return x

    with pytest.raises(RuntimeError, match="mutable keyword-only arguments"):
        f(torch.randn(3), out=torch.empty(3))


def test_custom_op_out_tag_register_fake_warns(d: Dispatcher) -> None:
    @customop.custom_op(
        "_torch_testing::out_tag_register_fake_warns",
        mutates_args={"out"},
        tags=torch.Tag.out,
        dispatcher=d,
    )
    def f(x: Tensor, *, out: Tensor) -> Tensor:
        out.copy_(x)
        return out

    with pytest.warns(UserWarning, match="torch.Tag.out"):

        @f.register_fake
        def _(x: Any, *, out: Any) -> Any:
            return out.clone()

    with customop.FakeTensorMode() as mode:
        fake_x = mode.from_real(torch.randn(3))
        fake_out = torch.empty_like(fake_x)
        assert f(fake_x, out=fake_out) is not fake_out


def test_custom_op_register_fake_ordinary_op(d: Dispatcher) -> None:
    @customop.custom_op("_torch_testing::register_fake_ordinary_op", mutates_args=(), dispatcher=d)
    def f(x: Tensor) -> Tensor:
        return x.clone()

    called = False

    @f.register_fake
    def _(x: Any) -> Any:
        nonlocal called
        called = True
        return x.new_empty(x.shape)

    with customop.FakeTensorMode() as mode:
        fake_x = mode.from_real(torch.randn(3))
        fake_result = f(fake_x)
        assert fake_result is not fake_x
    assert called


def test_custom_op_out_tag_register_autograd(d: Dispatcher) -> None:
    @customop.custom_op(
        "_torch_testing::out_tag_register_autograd",
        mutates_args={"out"},
        tags=torch.Tag.out,
        dispatcher=d,
    )
    def f(x: Tensor, *, out: Tensor) -> Tensor:
        out.copy_(x.sin())
        return out

    def backward(ctx: Any, grad: Any) -> Any:
        return grad

    with pytest.raises(RuntimeError, match="Out variants do not support autograd"):
        f.register_autograd(backward)

    with pytest.raises(RuntimeError, match="Out variants do not support autograd"):
        customop.register_autograd(f, backward)


def test_library_register_autograd_out_tag_low_level(d: Dispatcher) -> None:
    with customop.Library("_torch_testing", "FRAGMENT", dispatcher=d) as lib:
        lib.define(
            "out_tag_register_autograd_low_level(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
            tags=torch.Tag.out,
        )

        def backward(ctx: Any, grad: Any) -> Any:
            return grad

        with pytest.raises(RuntimeError, match="Out variants do not support autograd"):
            customop.register_autograd(
                "_torch_testing::out_tag_register_autograd_low_level", backward, dispatcher=d
            )


def test_custom_op_out_tag_positional_mutable_arg(d: Dispatcher) -> None:
    def f(x: Tensor, out: Tensor) -> Tensor:
        return out

    with pytest.raises(ValueError, match="keyword-only"):
        customop.custom_op(
            "_torch_testing::out_tag_positional_mutable_arg",
            f,
            mutates_args={"out"},
            tags=torch.Tag.out,
            dispatcher=d,
        )


def test_custom_op_out_tag_no_mutable_out(d: Dispatcher) -> None:
    def f(x: Tensor, *, out: Tensor) -> Tensor:
        return out

    with pytest.raises(ValueError, match="at least one"):
        customop.custom_op(
            "_torch_testing::out_tag_no_mutable_out",
            f,
            mutates_args=(),
            tags=torch.Tag.out,
            dispatcher=d,
        )


def test_custom_op_out_tag_optional_mutable_out(d: Dispatcher) -> None:
    def f(x: Tensor, *, out: Optional[Tensor]) -> Tensor:
        return x if out is None else out

    with pytest.raises(ValueError, match="only supports"):
        customop.custom_op(
            "_torch_testing::out_tag_optional_mutable_out",
            f,
            mutates_args={"out"},
            tags=torch.Tag.out,
            dispatcher=d,
        )


def test_custom_op_out_tag_list_mutable_out(d: Dispatcher) -> None:
    def f(x: Tensor, *, out: List[Tensor]) -> Tensor:
        return out[0]

    with pytest.raises(ValueError, match="only supports"):
        customop.custom_op(
            "_torch_testing::out_tag_list_mutable_out",
            f,
            mutates_args={"out"},
            tags=torch.Tag.out,
            dispatcher=d,
        )


def test_custom_op_out_tag_manual_schema_requires_tensor_out(d: Dispatcher) -> None:
    with pytest.raises(ValueError, match="only supports Tensor"):

        @customop.custom_op(
            "_torch_testing::out_tag_manual_schema_requires_tensor_out",
            mutates_args={"out"},
            schema="(Tensor x, *, int(a!) out) -> int(a!)",
            tags=torch.Tag.out,
            dispatcher=d,
        )
        def f(x: Any, *, out: Any) -> Any:
            return out


def test_custom_op_out_tag_return_mismatch(d: Dispatcher) -> None:
    def f(x: Tensor, *, out1: Tensor, out2: Tensor) -> Tensor:
        return out1

    with pytest.raises(ValueError, match="return annotation"):
        customop.custom_op(
            "_torch_testing::out_tag_return_mismatch",
            f,
            mutates_args={"out1", "out2"},
            tags=torch.Tag.out,
            dispatcher=d,
        )


def test_custom_op_out_tag_single_return_tuple_mismatch(d: Dispatcher) -> None:
    def f(x: Tensor, *, out: Tensor) -> tuple[Tensor]:
        return (out,)

    with pytest.raises(ValueError, match="return annotation"):
        customop.custom_op(
            "_torch_testing::out_tag_single_return_tuple_mismatch",
            f,
            mutates_args={"out"},
            tags=torch.Tag.out,
            dispatcher=d,
        )


def test_custom_op_out_tag_manual_schema(d: Dispatcher) -> None:
    @customop.custom_op(
        "_torch_testing::out_tag_manual_schema",
        mutates_args={"out"},
        schema="(Tensor x, Tensor y, *, Tensor(a!) out) -> Tensor(a!)",
        tags=torch.Tag.out,
        dispatcher=d,
    )
    def f(x: Any, y: Any, *, out: Any) -> Any:
        out.copy_(x + y)
        return out

    assert "out" in f.op.handle.tags
    schema = f.schema
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

    with customop.FakeTensorMode() as mode:
        fake_x = mode.from_real(torch.randn(3))
        fake_y = mode.from_real(torch.randn(3))
        fake_out = torch.empty_like(fake_x)
        assert f(fake_x, fake_y, out=fake_out) is fake_out


def test_custom_op_out_tag_bad_manual_schema(d: Dispatcher) -> None:
    with pytest.raises(ValueError, match="keyword-only"):

        @customop.custom_op(
            "_torch_testing::out_tag_bad_manual_schema",
            mutates_args={"out"},
            schema="(Tensor x, Tensor(a!) out) -> Tensor(a!)",
            tags=torch.Tag.out,
            dispatcher=d,
        )
        def f(x: Any, out: Any) -> Any:
            return out

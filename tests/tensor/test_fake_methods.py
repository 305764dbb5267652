"""FakeTensor's torch-style metadata methods: shapes as numpy computes them, symbols kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from customop import FakeTensor, FakeTensorMode, empty
from customop.tensor import ShapeEnv, SymBool, SymInt, check

Op = Callable[[Any], Any]

# The same operation on a numpy array and on a fake: the shapes must agree.
SAME_AS_NUMPY = [
    pytest.param(lambda x: x.reshape(-1, 4), lambda a: a.reshape(-1, 4), id="reshape-1"),
    pytest.param(lambda x: x.reshape((6, 4)), lambda a: a.reshape((6, 4)), id="reshape-tuple"),
    pytest.param(lambda x: x.view(2, -1), lambda a: a.reshape(2, -1), id="view"),
    pytest.param(lambda x: x.transpose(0, 2), lambda a: a.swapaxes(0, 2), id="transpose"),
    pytest.param(lambda x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), id="permute"),
    pytest.param(lambda x: x.unsqueeze(1), lambda a: a[:, None], id="unsqueeze"),
    pytest.param(lambda x: x.unsqueeze(-1), lambda a: a[..., None], id="unsqueeze-end"),
    pytest.param(lambda x: x[:1].squeeze(), lambda a: a[:1].squeeze(), id="squeeze"),
    pytest.param(lambda x: x[:1].squeeze(0), lambda a: a[:1].squeeze(0), id="squeeze-dim"),
    pytest.param(lambda x: x.squeeze(1), lambda a: a, id="squeeze-not-one"),
    pytest.param(
        lambda x: x.expand(5, 2, 3, 4), lambda a: np.broadcast_to(a, (5, 2, 3, 4)), id="expand-lead"
    ),
    pytest.param(lambda x: x.flatten(1), lambda a: a.reshape(2, -1), id="flatten"),
    pytest.param(lambda x: x[0], lambda a: a[0], id="int"),
    pytest.param(lambda x: x[:, None], lambda a: a[:, None], id="none"),
    pytest.param(lambda x: x[..., 1:3], lambda a: a[..., 1:3], id="ellipsis-slice"),
    pytest.param(lambda x: x[::2, -2:], lambda a: a[::2, -2:], id="step"),
    pytest.param(lambda x: x[1:-1, 5:], lambda a: a[1:-1, 5:], id="empty-slice"),
    pytest.param(lambda x: x[-9:, :-1, 0], lambda a: a[-9:, :-1, 0], id="clamped"),
    pytest.param(lambda x: x[1, ..., None, 2], lambda a: a[1, ..., None, 2], id="mixed"),
]


@pytest.mark.parametrize(("fake_op", "numpy_op"), SAME_AS_NUMPY)
def test_shapes_match_numpy(fake_op: Op, numpy_op: Op) -> None:
    array = np.zeros((2, 3, 4), dtype=np.float32)
    fake = FakeTensor((2, 3, 4), "float32", "cuda:1")
    result = fake_op(fake)
    assert result.shape == numpy_op(array).shape
    assert (result.dtype, result.device) == (fake.dtype, fake.device)


@pytest.fixture
def sym() -> tuple[ShapeEnv, SymInt, FakeTensor]:
    env = ShapeEnv()
    s0 = env.new_symint()
    return env, s0, FakeTensor((s0, 3, 4))


@pytest.mark.parametrize(
    ("op", "shape"),
    [
        pytest.param(lambda x: x.reshape(-1, 4), "(3*s0, 4)", id="reshape"),
        pytest.param(lambda x: x.view(-1), "(12*s0,)", id="view"),
        pytest.param(lambda x: x.transpose(0, 1), "(3, s0, 4)", id="transpose"),
        pytest.param(lambda x: x.permute(2, 0, 1), "(4, s0, 3)", id="permute"),
        pytest.param(lambda x: x.unsqueeze(0), "(1, s0, 3, 4)", id="unsqueeze"),
        pytest.param(lambda x: x.squeeze(), "(s0, 3, 4)", id="squeeze-keeps-symbols"),
        pytest.param(lambda x: x.flatten(), "(12*s0,)", id="flatten"),
        pytest.param(lambda x: x[1:], "(max(s0 - 1, 0), 3, 4)", id="slice"),
        pytest.param(lambda x: x[-2:], "(min(s0, 2), 3, 4)", id="slice-end"),
        pytest.param(lambda x: x[::2], "((s0 + 1) // 2, 3, 4)", id="step"),
        pytest.param(lambda x: x[0, None], "(1, 3, 4)", id="index"),
        pytest.param(lambda x: x.new_empty(x.shape[0], 2), "(s0, 2)", id="new_empty"),
        pytest.param(lambda x: x.new_zeros((x.numel(),)), "(12*s0,)", id="new_zeros"),
        pytest.param(lambda x: x.new_ones([2]), "(2,)", id="new_ones"),
    ],
)
def test_symbolic_sizes_stay_symbolic(sym: Any, op: Op, shape: str) -> None:
    _, _, fake = sym
    result = op(fake)
    assert isinstance(result, FakeTensor)
    assert str(result.shape) == shape


def test_reshape_onto_another_symbol_assumes_equal_counts(sym: Any) -> None:
    env, s0, fake = sym
    s1 = env.new_symint()
    assert fake.reshape(s1, 12).shape == (s1, 12)
    assert env.assumptions == ("12*s1 == 12*s0",)
    assert (s0 == s1) is True


def test_expand_a_symbol_to_another_assumes_equality(sym: Any) -> None:
    env, s0, _ = sym
    s1 = env.new_symint()
    assert FakeTensor((s0, 1)).expand(s1, 5).shape == (s1, 5)
    assert env.assumptions == ("s0 == s1",)
    assert FakeTensor((1, 3)).expand(s0, -1).shape == (s0, 3)


def test_metadata(sym: Any) -> None:
    _, s0, fake = sym
    assert str(fake.stride()) == "(12, 4, 1)"
    assert fake.stride(-1) == 1
    assert str(FakeTensor((2, s0)).stride()) == "(s0, 1)"
    assert FakeTensor((2, 0, 3)).stride() == (3, 3, 1)  # torch: max(size, 1)
    assert fake.is_contiguous()
    assert fake.contiguous() is fake
    assert fake.layout == "strided"
    assert fake.size(0) is s0
    assert str(fake.numel()) == "12*s0"
    assert FakeTensor((2,), "float16").element_size() == 2
    assert FakeTensor((2,), "bool").element_size() == 1
    assert FakeTensor((2,), "complex128").element_size() == 16


def test_new_tensors_take_dtype_and_device(sym: Any) -> None:
    _, _, fake = sym
    made = fake.new_empty((2,), dtype="int64", device="meta")
    assert (str(made.dtype), str(made.device)) == ("int64", "meta")
    with FakeTensorMode():
        assert isinstance(FakeTensor((2,)).new_zeros(3), FakeTensor)


@pytest.mark.parametrize(
    ("op", "message"),
    [
        pytest.param(
            lambda x: x.reshape(5),
            r"shape \(5,\) has 5 elements but the input has 6",
            id="reshape-count",
        ),
        pytest.param(lambda x: x.reshape(-1, -1), "more than one -1", id="two-inferred"),
        pytest.param(lambda x: x.reshape(0, -1), "has a 0 besides -1", id="zero-inferred"),
        pytest.param(lambda x: x.expand(4, 3), "size 2 cannot expand to 4", id="expand"),
        pytest.param(lambda x: x.expand(3), "fewer dimensions", id="expand-rank"),
        pytest.param(lambda x: x.permute(0, 0), "not a permutation", id="permute"),
        pytest.param(lambda x: x.unsqueeze(5), "out of range", id="unsqueeze"),
        pytest.param(lambda x: x[0, 0, 0], "3 indices for a 2-d fake", id="too-many"),
        pytest.param(lambda x: x[np.array([0])], "advanced", id="advanced"),
        pytest.param(lambda x: x[::-1], "slice step -1", id="negative-step"),
    ],
)
def test_bad_arguments(op: Op, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        op(FakeTensor((2, 3)))
    assert str(info.value).startswith("FakeTensor.")


def test_a_size_mismatch_of_symbols_that_cannot_hold_raises(sym: Any) -> None:
    _, _, fake = sym
    with pytest.raises(ValueError, match=r"has 35 elements but the input has 12\*s0"):
        fake.reshape(5, 7)


def test_checked_reshape_in_a_fake_impl_style(sym: Any) -> None:
    env, s0, _ = sym
    s1 = env.new_symint()
    check(s1 == 2 * s0)
    assert FakeTensor((s1, 6)).reshape(s0, 12).shape == (s0, 12)
    assert not isinstance(s1 * 6 == s0 * 12, SymBool)


@pytest.mark.parametrize(
    "layout",
    [None, "strided", type("L", (), {"__str__": lambda s: "torch.strided"})()],
    ids=["none", "name", "torch"],
)
def test_empty_accepts_the_strided_layout(layout: Any) -> None:
    assert empty((2, 3), layout=layout).shape == (2, 3)


def test_empty_refuses_other_layouts() -> None:
    with pytest.raises(ValueError, match=r"^empty: layout 'sparse_coo' is not supported\. "):
        empty((2,), layout="sparse_coo")


def test_iteration_along_a_concrete_first_dimension() -> None:
    assert [row.shape for row in FakeTensor((2, 3))] == [(3,), (3,)]


def test_iteration_over_a_symbolic_first_dimension_is_refused(sym: Any) -> None:
    _, _, fake = sym
    with pytest.raises(TypeError, match="needs a concrete first dimension"):
        list(fake)


@pytest.mark.parametrize("index", [2, -3], ids=["past-end", "before-start"])
def test_int_index_out_of_range(index: int) -> None:
    with pytest.raises(IndexError, match=f"index {index} is out of range for dimension 0"):
        FakeTensor((2, 3))[index]


def test_int_index_into_a_symbolic_size_is_assumed_in_range(sym: Any) -> None:
    env, s0, fake = sym
    assert fake[5].shape == (3, 4)
    assert env.assumptions == ("s0 > 5",)
    assert (s0 >= 6) is True


def test_new_tensors_check_the_layout() -> None:
    assert FakeTensor((2,)).new_ones(3, layout="strided").shape == (3,)
    with pytest.raises(ValueError, match=r"^FakeTensor\.new_empty: layout 'sparse_coo' is not"):
        FakeTensor((2,)).new_zeros(3, layout="sparse_coo")

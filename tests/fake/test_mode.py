"""FakeTensorMode, the Fake key's kernel order, get_ctx and dynamic sizes."""

from __future__ import annotations

import numpy as np
import pytest

from customop import Library, custom_op
from customop.dispatch import Dispatcher
from customop.fake import FakeTensorMode, get_ctx
from customop.symbolic._symint import IntLike
from customop.tensor import Device, FakeTensor, SymInt, dtype, empty, empty_like


def _ops(d: Dispatcher) -> tuple[object, object]:
    @custom_op("fk::add", mutates_args=(), dispatcher=d)
    def add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x + y

    @add.register_fake
    def _(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return empty_like(x)

    @custom_op("fk::nonzero", mutates_args=(), dispatcher=d)
    def nonzero(x: np.ndarray) -> np.ndarray:
        return np.argwhere(x)

    @nonzero.register_fake
    def _(x: np.ndarray) -> np.ndarray:
        return empty((get_ctx().new_dynamic_size(), x.ndim), dtype="int64", device=x.device)

    return add, nonzero


def test_ops_in_the_mode_compute_metadata_only(dispatcher: Dispatcher) -> None:
    add, _ = _ops(dispatcher)
    x = np.ones((2, 3), dtype=np.float32)
    with FakeTensorMode() as mode:
        fake = mode.from_real(x)
        result = add(fake, fake)  # type: ignore[operator]
        also = add(x, x)  # type: ignore[operator]  # real inputs dispatch to Fake too
    assert isinstance(result, FakeTensor) and isinstance(also, FakeTensor)
    assert (result.shape, str(result.dtype), str(result.device)) == ((2, 3), "float32", "cpu")


def test_dynamic_sizes_flow_through_later_ops(dispatcher: Dispatcher) -> None:
    add, nonzero = _ops(dispatcher)
    with FakeTensorMode() as mode:
        rows = nonzero(mode.from_real(np.ones((4, 2))))  # type: ignore[operator]
        summed = add(rows, rows)  # type: ignore[operator]
    assert isinstance(rows.shape[0], SymInt)
    assert str(rows.shape[0]) == "s0" and summed.shape == rows.shape
    assert repr(summed) == "FakeTensor(shape=(s0, 2), dtype=int64, device=cpu)"


def test_get_ctx_outside_a_fake_impl_is_an_error() -> None:
    with pytest.raises(RuntimeError) as excinfo:
        get_ctx()
    assert str(excinfo.value) == (
        "get_ctx: no fake impl is running. get_ctx() gives a fake impl its context "
        "(new_dynamic_size for data-dependent sizes), so it only works inside one. Call it "
        "from the function you registered with register_fake."
    )


def test_fake_key_order_meta_then_decomposition_then_error(dispatcher: Dispatcher) -> None:
    with Library("order", "DEF", dispatcher=dispatcher) as lib:
        lib.define("meta_only(Tensor x) -> Tensor")
        lib.impl("meta_only", lambda x: FakeTensor(x.shape, x.dtype, x.device), "Meta")
        lib.define("decomposed(Tensor x) -> Tensor")
        lib.define("missing(Tensor x) -> Tensor")
        lib.impl("missing", lambda x: x, "CPU")
        handle = dispatcher.find_schema_or_throw("order::meta_only")
        fake = FakeTensor((3,), "float32", "cpu")
        assert handle(fake).shape == (3,)
        meta_only = dispatcher.find_schema_or_throw("order::meta_only")
        lib.impl("decomposed", lambda x: meta_only(x))  # CompositeImplicitAutograd
        assert dispatcher.find_schema_or_throw("order::decomposed")(fake).shape == (3,)
        with pytest.raises(NotImplementedError, match="register_fake"):
            dispatcher.find_schema_or_throw("order::missing")(fake)


def test_from_real_rejects_non_arrays() -> None:
    with pytest.raises(TypeError, match="expected an array, got int"):
        FakeTensorMode().from_real(3)


def test_mode_is_reentrant_and_restores_keys(dispatcher: Dispatcher) -> None:
    add, _ = _ops(dispatcher)
    mode = FakeTensorMode()
    with mode, mode:
        assert isinstance(add(np.ones(1), np.ones(1)), FakeTensor)  # type: ignore[operator]
    np.testing.assert_array_equal(add(np.ones(1), np.ones(1)), [2.0])  # type: ignore[operator]


class _CountingMode(FakeTensorMode):
    """A subclass that overrides make_fake: empty_like must still call it."""

    def __init__(self) -> None:
        super().__init__()
        self.made = 0

    def make_fake(self, shape: tuple[IntLike, ...], dtype: dtype, device: Device) -> FakeTensor:
        self.made += 1
        return super().make_fake(shape, dtype, device)


def test_empty_like_of_a_fake_in_the_mode_is_a_new_fake_with_its_metadata() -> None:
    with FakeTensorMode() as mode:
        x = mode.from_real(np.zeros((2, 3), dtype=np.int64))
        y = empty_like(x)
        made = mode.make_fake(x.shape, x.dtype, x.device)
    assert type(y) is FakeTensor
    assert y is not x
    assert (y.shape, y.dtype, y.device) == (x.shape, x.dtype, x.device)
    assert (y.shape, y.dtype, y.device) == (made.shape, made.dtype, made.device)


@pytest.mark.parametrize("dtype_arg", [None, "float64"], ids=["like", "dtype"])
def test_empty_like_calls_an_overridden_make_fake(dtype_arg: str | None) -> None:
    with _CountingMode() as mode:
        x = mode.from_real(np.zeros(2, dtype=np.float32))
        y = empty_like(x, dtype=dtype_arg)
    assert mode.made == 1
    assert y.shape == (2,)
    assert str(y.dtype) == ("float32" if dtype_arg is None else "float64")


def test_only_the_plain_mode_class_skips_make_fake() -> None:
    from customop.tensor._factory import PLAIN_FAKE_FACTORIES

    assert FakeTensorMode in PLAIN_FAKE_FACTORIES
    assert _CountingMode not in PLAIN_FAKE_FACTORIES

"""Fake impls ported from torch: the deprecated ctx spelling, checks, and the refused
register_fake over a CompositeImplicitAutograd kernel."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from customop import FakeTensorMode, Library, check, custom_op, empty, register_fake
from customop.dispatch import Dispatcher
from customop.exceptions import RegistrationError
from customop.fake import get_ctx
from customop.tensor import SymInt


def test_create_unbacked_symint_is_a_deprecated_alias(dispatcher: Dispatcher) -> None:
    @custom_op("ported::nonzero", mutates_args=(), dispatcher=dispatcher)
    def nonzero(x: np.ndarray) -> np.ndarray:
        return np.argwhere(x)

    @nonzero.register_fake
    def _(x: Any) -> Any:
        rows = get_ctx().create_unbacked_symint()
        return empty((rows, x.ndim), dtype="int64")

    deprecated = pytest.warns(DeprecationWarning, match="create_unbacked_symint is deprecated")
    with FakeTensorMode() as mode, deprecated as w:
        out = nonzero(mode.from_real(np.eye(2)))
    assert isinstance(out.shape[0], SymInt)
    assert w[0].filename == __file__  # points at the fake impl, not at customop


def test_a_check_between_dynamic_sizes_in_a_fake_impl(dispatcher: Dispatcher) -> None:
    # torchao's nms fake: two data-dependent sizes, checked equal, then used as one.
    @custom_op("ported::boxes", mutates_args=(), dispatcher=dispatcher)
    def boxes(x: np.ndarray) -> np.ndarray:
        return x[x > 0]

    @custom_op("ported::join", mutates_args=(), dispatcher=dispatcher)
    def join(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.stack([a, b])

    boxes.register_fake(lambda x: empty((get_ctx().new_dynamic_size(),), dtype=x.dtype))

    @join.register_fake
    def _(a: Any, b: Any) -> Any:
        check(a.shape[0] == b.shape[0])
        return a.new_empty(2, b.shape[0])

    with FakeTensorMode() as mode:
        x = mode.from_real(np.ones(3))
        a, b = boxes(x), boxes(x)
        out = join(a, b)
        assert out.shape == (2, b.shape[0])
        assert out.shape[1] == a.shape[0]  # the recorded fact decides it
    assert mode.shape_env.assumptions == ("s0 == s1",)


def test_register_fake_over_composite_implicit_is_refused(dispatcher: Dispatcher) -> None:
    with Library("cia", "DEF", dispatcher=dispatcher) as lib:
        lib.define("scale(Tensor x) -> Tensor")
        lib.impl("scale", lambda x: x, "CompositeImplicitAutograd")
        with pytest.raises(RegistrationError) as info:
            register_fake("cia::scale", lambda x: x, dispatcher=dispatcher)
        message = str(info.value)
        assert message.startswith(
            "register_fake: cia::scale has a CompositeImplicitAutograd kernel (<lambda> at "
            "test_fake_impls.py:"
        )
        assert "a fake impl would never run" in message
        assert "Register the body as CompositeExplicitAutograd" in message
        # Nothing was registered.
        assert "Fake:" not in dispatcher.dump("cia::scale")
        # The fix: the body as CompositeExplicitAutograd, then the fake impl runs.
        lib.define("shift(Tensor x) -> Tensor")
        lib.impl("shift", lambda x: x, "CompositeExplicitAutograd")
        register_fake("cia::shift", lambda x: empty((7,)), dispatcher=dispatcher)
        with FakeTensorMode() as mode:
            assert dispatcher.find_schema_or_throw("cia::shift")(
                mode.from_real(np.ones(2))
            ).shape == (7,)

"""Destination passing: outputs allocated from the op's fake impl, of the caller's type."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import customop
from customop import Dispatcher
from customop.cpp import load_library
from customop.cpp._build import build
from customop.exceptions import KernelError, RegistrationError

torch = pytest.importorskip("torch")

HERE = Path(__file__).parent
MAKERS: dict[str, Callable[..., Any]] = {
    "numpy": lambda *v, dtype="float64": np.array(v, dtype=dtype),
    "torch": lambda *v, dtype="float64": torch.tensor(v, dtype=getattr(torch, dtype)),
}


def _numpy(value: Any) -> Any:
    return value.numpy() if isinstance(value, torch.Tensor) else value


@pytest.fixture
def fakes() -> Iterator[None]:
    def scale_and_sum(x: Any, *, k: float = 2.0) -> tuple[Any, Any]:
        return customop.empty_like(x), customop.empty((1,), dtype=customop.float64)

    fns = [
        customop.register_fake("cpptest::add_dest", lambda a, b: customop.empty_like(a)),
        customop.register_fake("cpptest::scale_and_sum", scale_and_sum),
    ]
    yield
    for fn in fns:
        customop.handle_of(fn).remove()


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_outputs_come_from_the_fake_impl_as_the_callers_arrays(
    ops: Any, fakes: None, kind: str
) -> None:
    a, b = MAKERS[kind](1.0, 2.0), MAKERS[kind](10.0, 20.0)
    out = ops.add_dest(a, b)
    assert type(out) is type(a)
    np.testing.assert_allclose(_numpy(out), [11.0, 22.0])


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_two_outputs_of_their_own_shape_and_dtype(ops: Any, fakes: None, kind: str) -> None:
    x = MAKERS[kind](1.0, 2.0, 3.0, dtype="float32")
    scaled, total = ops.scale_and_sum(x, k=3.0)
    assert type(scaled) is type(x) and type(total) is type(x)
    assert str(scaled.dtype).removeprefix("torch.") == "float32"
    assert str(total.dtype).removeprefix("torch.") == "float64"
    np.testing.assert_allclose(_numpy(scaled), [3.0, 6.0, 9.0])
    np.testing.assert_allclose(_numpy(total), [6.0])


def test_opcheck_and_fake_mode(ops: Any, fakes: None) -> None:
    args = (np.ones(3), np.arange(3.0))
    assert set(customop.opcheck(ops.add_dest.default, args).values()) == {"SUCCESS"}
    with customop.FakeTensorMode() as mode:
        out = ops.add_dest(mode.from_real(args[0]), mode.from_real(args[1]))
    assert isinstance(out, customop.FakeTensor) and tuple(out.shape) == (3,)


def test_through_the_torch_adapters_eager_call(ops: Any, fakes: None) -> None:
    import customop.torch as ct

    handle = ct.register("cpptest::add_dest")
    try:
        t = torch.arange(4.0, dtype=torch.float64)
        for _ in range(2):  # the first call fills the adapter's cache, the second hits it
            out = ops.add_dest(t, t)
            assert type(out) is torch.Tensor
            np.testing.assert_allclose(out.numpy(), np.arange(4) * 2.0)
        np.testing.assert_allclose(torch.ops.cpptest.add_dest(t, t).numpy(), np.arange(4) * 2.0)
    finally:
        handle.remove()


def test_without_a_fake_impl_the_error_says_to_register_one(ops: Any) -> None:
    with pytest.raises(KernelError) as caught:
        ops.add_dest(np.ones(2), np.ones(2))
    text = str(caught.value)
    assert text.startswith("cpptest::add_dest: the C++ kernel at ")
    assert "the op has no fake impl" in text
    assert "@customop.register_fake('cpptest::add_dest')" in text
    assert "\n" not in text


def test_a_fake_impl_returning_the_wrong_count_is_refused(ops: Any) -> None:
    fn = customop.register_fake(
        "cpptest::scale_and_sum", lambda x, *, k=2.0: customop.empty_like(x)
    )
    try:
        with pytest.raises(KernelError, match=r"returned FakeTensor, not 2 FakeTensor\(s\)"):
            ops.scale_and_sum(np.ones(2))
    finally:
        customop.handle_of(fn).remove()


def test_errors_name_the_schemas_arguments(ops: Any, fakes: None) -> None:
    with pytest.raises(KernelError, match=r"argument 'b' is not contiguous"):
        ops.add_dest(np.ones(2), np.ones(4)[::2])


def test_out_from_fake_on_a_kernel_that_returns_its_output(build_dir: Path) -> None:
    path = build("cppdest", [HERE / "bad_destination.cpp"], build_directory=build_dir)
    d = Dispatcher()
    with pytest.raises(RegistrationError) as caught:
        load_library(path, dispatcher=d)
    text = str(caught.value)
    assert "cppdest::twice at " in text and "bad_destination.cpp:" in text
    assert "registered with .out_from_fake()" in text
    assert "the kernel should take (Tensor, Tensor) and return void" in text
    assert d.snapshot().operators == ()

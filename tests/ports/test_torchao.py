"""torchao's registrations (``torchao/utils.py``, ``torchao/ops.py``), ported.

torchao builds ops two ways. ``_register_custom_op(lib)`` turns a Python
function into an op whose body is a CompositeImplicitAutograd kernel: it
builds the schema text as ``op_name + infer_schema(fn, mutates_args={})`` and
registers with ``lib.define`` / ``lib.impl``. ``ops.py`` defines ops with
``lib.define`` and registers fake impls with ``register_fake(name)(func)``,
or ``impl_abstract(name)(func)`` on torch before 2.4::

    def register_custom_op(name):
        def decorator(func):
            if TORCH_VERSION_AT_LEAST_2_4:
                return torch.library.register_fake(f"{name}")(func)
            else:
                return torch.library.impl_abstract(f"{name}")(func)
        return decorator

The port renames ``torch`` to ``customop``; the kernels are numpy (ours).
"""

# The ported code keeps the originals' names and signatures (A, B, splitK, many
# positional parameters), so that it reads as the code it restates.
# ruff: noqa: N803

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import customop
from customop import Library, Tensor, infer_schema
from tests.ports._harness import run_every_way


def _register_custom_op(lib: Library) -> Callable[[Callable[..., Any]], Any]:
    """torchao's helper, without the inductor decomposition (customop has no inductor)."""

    def decorator(fn: Callable[..., Any]) -> Any:
        op_name = fn.__name__
        if op_name[0] == "_":
            op_name = op_name[1:]
        schema = op_name + infer_schema(fn, mutates_args={})
        lib.define(schema)
        lib.impl(op_name, fn, "CompositeImplicitAutograd")
        lib_namespace = lib.ns
        return getattr(getattr(customop.ops, lib_namespace), op_name)

    return decorator


quant_lib = Library("torchao", "FRAGMENT")
register_custom_op = _register_custom_op(quant_lib)

# -- ops.py: lib.define, then the fake impl by name -------------------------------------

quant_lib.define("int_scaled_mm(Tensor a, Tensor b, Tensor scales, int splitK) -> Tensor")

TORCH_VERSION_AT_LEAST_2_4 = True


def register_fake_for(name: str) -> Callable[[Callable[..., Any]], Any]:
    def decorator(func: Callable[..., Any]) -> Any:
        if TORCH_VERSION_AT_LEAST_2_4:
            return customop.register_fake(f"{name}")(func)
        return customop.impl_abstract(f"{name}")(func)

    return decorator


@register_fake_for("torchao::int_scaled_mm")
def _(a: Tensor, b: Tensor, scales: Tensor, splitK: int = 1) -> Tensor:
    if len(a.shape) != 2:
        raise ValueError(f"a should be a 2d tensor. Got {len(a.shape)} dims")
    return customop.new_empty(a, (a.shape[0], b.shape[1]), dtype=customop.float32)


@customop.impl("torchao::int_scaled_mm", "cpu")
def _(a: np.ndarray, b: np.ndarray, scales: np.ndarray, splitK: int) -> np.ndarray:
    return ((a.astype(np.int32) @ b.astype(np.int32)) * scales).astype(np.float32)


# -- utils.py: _register_custom_op, a composite of the op above --------------------------


@register_custom_op
def _int_scaled_matmul(a: Tensor, b: Tensor, scales: Tensor, out_dtype: customop.dtype) -> Tensor:
    out = customop.ops.torchao.int_scaled_mm(a, b, scales, 1)
    return customop.ops.torchao.cast(out, out_dtype)


quant_lib.define("cast(Tensor x, ScalarType dtype) -> Tensor")
quant_lib.impl("cast", lambda x, dtype: x.astype(dtype), "CPU")
customop.register_fake("torchao::cast", lambda x, dtype: customop.empty_like(x, dtype=dtype))

rng = np.random.default_rng(3)
a8 = rng.integers(-8, 8, size=(3, 4), dtype=np.int8)
b8 = rng.integers(-8, 8, size=(4, 2), dtype=np.int8)
scales = np.array([[0.5, 2.0]], dtype=np.float32)


def test_the_schema_text_is_built_as_torchao_builds_it() -> None:
    assert customop.ops.torchao.int_scaled_matmul.default.schema.format("source") == (
        "torchao::int_scaled_matmul(Tensor a, Tensor b, Tensor scales, ScalarType out_dtype) "
        "-> Tensor"
    )
    assert _int_scaled_matmul is customop.ops.torchao.int_scaled_matmul


def test_the_fake_registered_by_name_runs_every_way() -> None:
    out = run_every_way(customop.ops.torchao.int_scaled_mm.default, (a8, b8, scales, 1))
    np.testing.assert_array_equal(out, (a8.astype(np.int32) @ b8.astype(np.int32)) * scales)


@pytest.mark.parametrize("dtype", [np.float16, "float64"], ids=["np-type", "name"])
def test_the_composite_op_decomposes_every_way(dtype: Any) -> None:
    op = customop.ops.torchao.int_scaled_matmul.default
    # opcheck on a numpy type argument: helper autograd's part of #15 §3 (see test_bitsandbytes).
    out = run_every_way(op, (a8, b8, scales, dtype), opcheck=dtype != np.float16)
    assert out.dtype == np.dtype(dtype)
    assert customop.dispatcher.table_entry("torchao::int_scaled_matmul", "Fake").reason == (
        "math kernel"
    )


def test_impl_abstract_is_a_deprecated_register_fake() -> None:
    with Library("torchao_old", "FRAGMENT") as lib:
        lib.define("int_scaled_mm(Tensor a, Tensor b, Tensor scales, int splitK) -> Tensor")
        lib.impl("int_scaled_mm", lambda a, b, scales, splitK: a @ b, "CPU")

        def fake(a: Tensor, b: Tensor, scales: Tensor, splitK: int) -> Tensor:
            return customop.new_empty(a, (a.shape[0], b.shape[1]))

        with pytest.warns(DeprecationWarning, match=r"^impl_abstract is deprecated"):
            assert customop.impl_abstract("torchao_old::int_scaled_mm", lib=lib)(fake) is fake
        entry = customop.dispatcher.table_entry("torchao_old::int_scaled_mm", "Fake")
        assert (entry.reason, entry.kernel) == ("kernel", "fake")
    assert customop.dispatcher.find_op("torchao_old::int_scaled_mm") is None

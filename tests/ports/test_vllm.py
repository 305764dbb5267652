"""vLLM's ``direct_register_custom_op`` (``vllm/utils``), ported.

vLLM registers its ops without ``@custom_op`` (its per-call cost matters to
vLLM): it infers the schema text, prefixes the op's name, defines it in a
FRAGMENT library, registers the function as the platform's kernel and the
fake impl with the private ``Library._register_fake``. The port is the same
function with ``torch.library`` renamed to ``customop``; the kernels are
numpy stand-ins written by us.
"""

# The ported code keeps the originals' names and signatures (A, B, splitK, many
# positional parameters), so that it reads as the code it restates.
# ruff: noqa: PLR0917

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import customop
from customop import Library, Tensor
from tests.ports._harness import run_every_way

vllm_lib = Library("vllm", "FRAGMENT")  # module-level, as vLLM's


def direct_register_custom_op(
    op_name: str,
    op_func: Callable[..., Any],
    mutates_args: list[str] | None = None,
    fake_impl: Callable[..., Any] | None = None,
    target_lib: Library | None = None,
    dispatch_key: str = "CPU",
    tags: tuple[Any, ...] = (),
) -> None:
    """vLLM's helper, line for line (the platform's key is ``"CPU"`` here)."""
    if mutates_args is None:
        mutates_args = []
    schema_str = customop.infer_schema(op_func, mutates_args=mutates_args)
    my_lib = target_lib or vllm_lib
    my_lib.define(op_name + schema_str, tags=tags)
    my_lib.impl(op_name, op_func, dispatch_key=dispatch_key)
    if fake_impl is not None:
        my_lib._register_fake(op_name, fake_impl)


# -- a functional op (the shape of vLLM's fused ops) ----------------------------------


def silu_and_mul(x: Tensor) -> Tensor:
    d = x.shape[-1] // 2
    gate = x[..., :d]
    return (gate / (1.0 + np.exp(-gate)) * x[..., d:]).astype(x.dtype)


def silu_and_mul_fake(x: Tensor) -> Tensor:
    d = x.shape[-1] // 2
    return customop.empty((*x.shape[:-1], d), dtype=x.dtype, device=x.device)


direct_register_custom_op(
    op_name="silu_and_mul",
    op_func=silu_and_mul,
    fake_impl=silu_and_mul_fake,
    tags=("needs_fixed_stride_order",),
)


# -- a mutating op that returns nothing (unified_attention_with_output) ---------------


def unified_attention_with_output(
    query: Tensor, key: Tensor, value: Tensor, output: Tensor, layer_name: str
) -> None:
    scores = query @ key.T / np.sqrt(query.shape[-1])
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    output[...] = (weights / weights.sum(axis=-1, keepdims=True)) @ value


def unified_attention_with_output_fake(
    query: Tensor, key: Tensor, value: Tensor, output: Tensor, layer_name: str
) -> None:
    return


direct_register_custom_op(
    op_name="unified_attention_with_output",
    op_func=unified_attention_with_output,
    mutates_args=["output"],
    fake_impl=unified_attention_with_output_fake,
    tags="cudagraph_unsafe",  # a bare tag, as torch.Tag.cudagraph_unsafe is one
)


# -- the tests ------------------------------------------------------------------------

rng = np.random.default_rng(1)


def test_the_schema_text_is_torchs() -> None:
    schema = customop.infer_schema(unified_attention_with_output, mutates_args=["output"])
    assert "x" + schema == (
        "x(Tensor query, Tensor key, Tensor value, Tensor(a3!) output, str layer_name) -> ()"
    )
    assert isinstance(schema, customop.FunctionSchema)


def test_silu_and_mul_runs_every_way() -> None:
    x = rng.standard_normal((2, 8)).astype(np.float32)
    out = run_every_way(customop.ops.vllm.silu_and_mul.default, (x,))
    np.testing.assert_allclose(out, silu_and_mul(x), rtol=1e-6)
    assert out.shape == (2, 4)


def test_tags_are_kept_whole() -> None:
    find = customop.dispatcher.find_op
    assert find("vllm::silu_and_mul").tags == ("needs_fixed_stride_order",)
    assert find("vllm::unified_attention_with_output").tags == ("cudagraph_unsafe",)


def test_torch_tags_are_read_by_name() -> None:
    torch = pytest.importorskip("torch")
    with Library("vllm_tags", "FRAGMENT") as lib:
        direct_register_custom_op(
            "one", silu_and_mul, target_lib=lib, tags=(torch.Tag.needs_fixed_stride_order,)
        )
        lib.define("two(Tensor x) -> Tensor", tags=torch.Tag.pointwise)
        find = customop.dispatcher.find_op
        assert find("vllm_tags::one").tags == ("needs_fixed_stride_order",)
        assert find("vllm_tags::two").tags == ("pointwise",)


def test_unified_attention_with_output_writes_output_every_way() -> None:
    q, k, v = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(3))
    output = np.zeros((3, 4), dtype=np.float32)
    op = customop.ops.vllm.unified_attention_with_output
    assert op(q, k, v, output, "layer.0") is None
    assert np.abs(output).sum() > 0
    run_every_way(op.default, (q, k, v, np.zeros((3, 4), dtype=np.float32), "layer.0"))


def test_the_fake_impl_is_the_librarys_and_goes_with_it() -> None:
    with Library("vllm_scoped", "FRAGMENT") as lib:
        direct_register_custom_op(
            "silu_and_mul", silu_and_mul, fake_impl=silu_and_mul_fake, target_lib=lib
        )
        entry = customop.dispatcher.table_entry("vllm_scoped::silu_and_mul", "Fake")
        assert entry.kernel == "silu_and_mul_fake"
    assert customop.dispatcher.find_op("vllm_scoped::silu_and_mul") is None


def test_a_kernel_that_does_not_fit_the_schema_is_refused_at_impl() -> None:
    with Library("vllm_bad", "FRAGMENT") as lib:
        lib.define("f(Tensor x, *, int n) -> Tensor")
        with pytest.raises(customop.RegistrationError) as excinfo:
            lib.impl("f", lambda x: x, "CPU")
    assert str(excinfo.value) == (
        "Library.impl: the kernel <lambda>(x) does not match the schema vllm_bad::f(Tensor x, "
        "*, int n) -> Tensor: it has no parameter for keyword-only argument 'n'. The dispatcher "
        "calls it with the op's arguments, positional ones by position and keyword-only ones "
        "by name. Give it the schema's parameters, positional ones first."
    )

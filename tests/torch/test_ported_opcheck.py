"""torch's tests of ``torch.library.opcheck``, ported: customop ops checked by torch's opcheck.

From ``test/test_custom_ops.py`` (``TestCustomOpTesting``, ``TestCustomOpAPI``,
torch 2.13). The ops are customop's (``customop.Library``,
``customop.custom_op``), registered in torch (``customop.torch.register``),
and ``torch.library.opcheck`` is given customop's op objects, as a torch
user holding them would pass them. The namespace is the test's own.
unittest's assertions are pytest's; what they assert is torch's.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

import customop
import customop.torch

optests = pytest.importorskip("torch.testing._internal.optests")


@pytest.fixture
def lib(ns: str, track: list[Any]) -> customop.Library:
    library = customop.Library(ns, "FRAGMENT")
    track += [library, customop.torch.register(ns)]
    return library


def _op(ns: str) -> Any:
    return getattr(customop.ops, ns).foo.default


def test_incorrect_schema_mutation(ns: str, lib: customop.Library) -> None:
    lib.define("foo(Tensor x) -> Tensor")
    op = _op(ns)

    class Foo(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            guard = torch._C._AutoDispatchBelowAutograd()
            try:
                return op(x)
            finally:
                del guard

        @staticmethod
        def backward(ctx: Any, gx: Any) -> Any:
            return gx

    def foo_impl(x: Any) -> Any:
        x.sin_()
        return x.clone()

    lib.impl("foo", Foo.apply, "Autograd")
    lib.impl("foo", foo_impl, "CPU")
    lib.impl("foo", foo_impl, "CUDA")

    x = torch.tensor(3.14159 / 3, requires_grad=True)
    with pytest.raises(
        optests.OpCheckError, match="Argument x is not defined as mutable but was mutated"
    ):
        torch.library.opcheck(op, (x,), {})


def test_opcheck_cpu_stride_mismatch(ns: str, track: list[Any]) -> None:
    @customop.custom_op(f"{ns}::stride_mismatch", mutates_args=())
    def stride_mismatch(x: torch.Tensor) -> torch.Tensor:
        return x.clone().permute(2, 0, 1)

    @stride_mismatch.register_fake
    def _(x: Any) -> Any:
        c, h, w = x.shape[2], x.shape[0], x.shape[1]
        return x.new_empty(c, h, w)

    track += [stride_mismatch, customop.torch.register(stride_mismatch)]
    x = torch.randn(4, 4, 3)
    with pytest.raises(optests.OpCheckError, match="Stride mismatch"):
        torch.library.opcheck(stride_mismatch, (x,))


def test_opcheck_unbacked_stride(ns: str, track: list[Any]) -> None:
    @customop.custom_op(f"{ns}::f", mutates_args=[])
    def f(x: torch.Tensor) -> torch.Tensor:
        return x.new_zeros((x.size(0), 18))

    @f.register_fake
    def _(x: torch.Tensor) -> torch.Tensor:
        ctx = customop.get_ctx()
        s = ctx.new_dynamic_size()
        return torch.empty(x.shape[0], s, device=x.device, dtype=x.dtype)

    track += [f, customop.torch.register(f)]
    example = torch.zeros([10, 20])
    torch.library.opcheck(f, args=[example])


def test_incorrect_abstract_impl(ns: str, lib: customop.Library) -> None:
    lib.define("foo(Tensor x) -> Tensor")
    op = _op(ns)

    class Foo(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            # Emulate AutoDispatchBelowADInplaceOrView, which is not bound into python
            with (
                torch._C._AutoDispatchBelowAutograd(),
                torch._C._ExcludeDispatchKeyGuard(
                    torch._C.DispatchKeySet(torch._C.DispatchKey.ADInplaceOrView)
                ),
            ):
                return op(x)

        @staticmethod
        def backward(ctx: Any, gx: Any) -> Any:
            return gx

    def foo_impl(x: Any) -> Any:
        return x**2

    def foo_meta(x: Any) -> Any:
        return x.unsqueeze(1) ** 2

    lib.impl("foo", Foo.apply, "Autograd")
    lib.impl("foo", foo_impl, "CPU")
    lib.impl("foo", foo_impl, "CUDA")
    lib.impl("foo", foo_meta, "Meta")

    x = torch.tensor([0, 1.0], requires_grad=True)
    with pytest.raises(optests.OpCheckError, match=r"Shapes .* are not equal"):
        torch.library.opcheck(op, (x,), {})


def test_global_state_mutation(ns: str, lib: customop.Library) -> None:
    lib.define("foo(Tensor x) -> Tensor")
    op = _op(ns)

    class Foo(torch.autograd.Function):
        invoked = 0

        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            Foo.invoked += 1
            return x.clone() * Foo.invoked

        @staticmethod
        def backward(ctx: Any, gx: Any) -> Any:
            return gx

    lib.impl("foo", Foo.apply, "CompositeImplicitAutograd")

    x = torch.tensor(3.14159 / 3, requires_grad=True)
    with pytest.raises(optests.OpCheckError, match="eager-mode PyTorch vs AOTDispatcher"):
        torch.library.opcheck(op, (x,), {})

    # Test that we can actually see the absolute difference numbers
    try:
        torch.library.opcheck(op, (x,), {})
    except optests.OpCheckError as err:
        orig = err.__context__.__context__  # type: ignore[union-attr]
        assert "Absolute difference:" in str(orig)

    # Test atol/rtol overrides
    torch.library.opcheck(op, (x,), {}, atol=3, rtol=0.01)


def test_a_customop_op_not_in_torch_is_refused_with_the_fix(dispatcher: Any) -> None:
    op = customop.custom_op(
        "nottorch::f", lambda x: x * 2, mutates_args=(), schema="(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"not registered in torch.*customop\.torch\.register"):
        torch.library.opcheck(op, (torch.randn(3),))


def test_torch_ops_reach_torchs_opcheck_unchanged() -> None:
    with pytest.raises(ValueError, match="OpOverload"):
        torch.library.opcheck(torch.sin, (torch.randn(3),))
    assert torch.library.opcheck(torch.ops.aten.sin.default, (torch.randn(3),))


def test_the_op_object_the_overload_and_the_packet_are_all_accepted(
    ns: str, track: list[Any]
) -> None:
    @customop.custom_op(f"{ns}::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    twice.register_fake(lambda x: torch.empty_like(x))
    track += [twice, customop.torch.register(twice)]
    expected = dict.fromkeys(
        (
            "test_schema",
            "test_autograd_registration",
            "test_faketensor",
            "test_aot_dispatch_dynamic",
        ),
        "SUCCESS",
    )
    packet = getattr(customop.ops, ns).twice
    for op in (twice, twice.op, packet):
        assert torch.library.opcheck(op, (torch.randn(3),)) == expected

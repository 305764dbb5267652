"""torch's tests of ``opcheck`` on torch tensors, ported to ``customop.opcheck``.

From ``test/test_custom_ops.py`` (``TestCustomOpTesting``, ``TestCustomOpAPI``,
torch 2.13), on customop alone: ``torch.library`` is ``customop``,
``torch.ops`` is ``customop.ops`` (``Ops`` of a fresh dispatcher),
``optests.OpCheckError`` is ``customop.OpCheckError``, and torch's direct
``optests.autograd_registration_check(op, args, kwargs)`` is
``customop.opcheck(op, args, kwargs, test_utils="test_autograd_registration")``
(customop has the checks inside ``opcheck`` only). The kernels are torch's,
``autograd.Function``\\ s on the ``Autograd`` key and
``torch._C._AutoDispatchBelowAutograd()`` included. unittest's assertions are
pytest's; what they assert is torch's. The ``device`` parameter is the cpu.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import customop  # noqa: E402
from customop import OpCheckError  # noqa: E402
from customop.dispatch import Dispatcher  # noqa: E402
from customop.library import Ops  # noqa: E402

TEST_NS = "_test_custom_op"
device = "cpu"


@pytest.fixture
def lib(d: Dispatcher) -> Any:
    with customop.Library(TEST_NS, "FRAGMENT", dispatcher=d) as library:
        yield library


def _op(d: Dispatcher) -> Any:
    return Ops(d)._test_custom_op.foo.default


def test_incorrect_schema_mutation(d: Dispatcher, lib: Any) -> None:
    lib.define("foo(Tensor x) -> Tensor")
    op = _op(d)

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

    x = torch.tensor(3.14159 / 3, requires_grad=True, device=device)
    with pytest.raises(OpCheckError, match="Argument x is not defined as mutable but was mutated"):
        customop.opcheck(op, (x,), {})


def test_incorrect_schema_view(d: Dispatcher, lib: Any) -> None:
    lib.define("foo(Tensor x) -> Tensor")
    op = _op(d)

    class Foo(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            # Emulate AutoDispatchBelowADInplaceOrView, which is not bound into python
            with torch._C._AutoDispatchBelowAutograd():  # noqa: SIM117 -- torch's code
                with torch._C._ExcludeDispatchKeyGuard(
                    torch._C.DispatchKeySet(torch._C.DispatchKey.ADInplaceOrView)
                ):
                    return op(x)

        @staticmethod
        def backward(ctx: Any, gx: Any) -> Any:
            return gx

    def foo_impl(x: Any) -> Any:
        return x.view_as(x)

    def foo_meta(x: Any) -> Any:
        return x.view_as(x)

    lib.impl("foo", Foo.apply, "Autograd")
    lib.impl("foo", foo_impl, "CPU")
    lib.impl("foo", foo_meta, "Meta")

    x = torch.tensor(3.14159 / 3, requires_grad=True)
    with pytest.raises(
        OpCheckError, match="Argument x is not defined to alias output but was aliasing"
    ):
        customop.opcheck(op, (x,), {})


def test_opcheck_cpu_stride_mismatch(d: Dispatcher) -> None:
    @customop.custom_op("test::stride_mismatch", mutates_args=(), dispatcher=d)
    def stride_mismatch(x: torch.Tensor) -> torch.Tensor:
        return x.clone().permute(2, 0, 1)

    @stride_mismatch.register_fake
    def _(x: Any) -> Any:
        c, h, w = x.shape[2], x.shape[0], x.shape[1]
        return x.new_empty(c, h, w)

    x = torch.randn(4, 4, 3, device=device)
    with pytest.raises(OpCheckError, match="Stride mismatch"):
        customop.opcheck(stride_mismatch, (x,))


def test_opcheck_unbacked_stride(d: Dispatcher) -> None:
    @customop.custom_op("test::f", mutates_args=[], dispatcher=d)
    def f(x: torch.Tensor) -> torch.Tensor:
        return x.new_zeros((x.size(0), 18))

    @f.register_fake
    def _(x: torch.Tensor) -> torch.Tensor:
        ctx = customop.get_ctx()
        s = ctx.new_dynamic_size()
        return torch.empty(x.shape[0], s, device=x.device, dtype=x.dtype)

    example = torch.zeros([10, 20], device=device)
    customop.opcheck(f, args=[example])


def test_missing_abstract_impl(d: Dispatcher, lib: Any) -> None:
    lib.define("foo(Tensor x) -> Tensor")
    op = _op(d)

    class Foo(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            with torch._C._AutoDispatchBelowAutograd():
                return op(x)

        @staticmethod
        def backward(ctx: Any, gx: Any) -> Any:
            return 2 * gx

    def foo_impl(x: Any) -> Any:
        return torch.tensor(x.cpu().numpy() ** 2, device=x.device)

    lib.impl("foo", Foo.apply, "Autograd")
    lib.impl("foo", foo_impl, "CPU")
    lib.impl("foo", foo_impl, "CUDA")

    x = torch.tensor([0, 1.0], requires_grad=True)
    with pytest.raises(OpCheckError, match=r"_test_custom_op.foo.default"):
        customop.opcheck(op, (x,), {})


def test_incorrect_abstract_impl(d: Dispatcher, lib: Any) -> None:
    lib.define("foo(Tensor x) -> Tensor")
    op = _op(d)

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
    with pytest.raises(OpCheckError, match=r"Shapes .* are not equal"):
        customop.opcheck(op, (x,), {})


def test_autograd_registered_at_backend(d: Dispatcher, lib: Any) -> None:
    lib.define("foo(Tensor x) -> Tensor")
    op = _op(d)

    class Foo(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x.clone()

        @staticmethod
        def backward(ctx: Any, gx: Any) -> Any:
            return gx * 0.5

    lib.impl("foo", Foo.apply, "CPU")
    lib.impl("foo", Foo.apply, "CUDA")
    lib.impl("foo", lambda x: x.clone(), "Meta")

    x = torch.randn([], requires_grad=True)

    with pytest.raises(OpCheckError, match="does not have an autograd kernel"):
        customop.opcheck(op, (x,), {})


def test_global_state_mutation(d: Dispatcher, lib: Any) -> None:
    lib.define("foo(Tensor x) -> Tensor")
    op = _op(d)

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
    with pytest.raises(OpCheckError, match="eager-mode PyTorch vs AOTDispatcher"):
        customop.opcheck(op, (x,), {})

    # Test that we can actually see the absolute difference numbers
    try:
        customop.opcheck(op, (x,), {})
    except OpCheckError as err:
        orig = err.__context__.__context__  # type: ignore[union-attr]
        assert "Absolute difference:" in str(orig)

    # Test atol/rtol overrides
    customop.opcheck(op, (x,), {}, atol=3, rtol=0.01)


def test_autograd_registration_check_autograd_kernel(d: Dispatcher, lib: Any) -> None:
    lib.define("foo(Tensor x) -> Tensor")
    op = _op(d)

    class Foo(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            with torch._C._AutoDispatchBelowAutograd():
                return op(x)

        @staticmethod
        def backward(ctx: Any, gx: Any) -> Any:
            return gx

    def foo_impl(x: Any) -> Any:
        return x.sin()

    lib.impl("foo", Foo.apply, "Autograd")
    lib.impl("foo", foo_impl, "CPU")
    lib.impl("foo", foo_impl, "CUDA")

    x = torch.randn(3, requires_grad=True, device=device)
    # Should not raise
    customop.opcheck(op, (x,), {}, test_utils="test_autograd_registration")


def test_autograd_registration_check_compositeimplicitautograd(d: Dispatcher, lib: Any) -> None:
    lib.define("foo(Tensor x) -> Tensor")
    op = _op(d)

    def foo_impl(x: Any) -> Any:
        return x.sin().cos()

    lib.impl("foo", foo_impl, "CompositeImplicitAutograd")

    x = torch.randn(3, requires_grad=True, device=device)
    # Should not raise
    customop.opcheck(op, (x,), {}, test_utils="test_autograd_registration")


def test_autograd_registration_check_incorrect_composite(d: Dispatcher, lib: Any) -> None:
    lib.define("foo(Tensor x) -> Tensor")
    op = _op(d)

    def foo_impl(x: Any) -> Any:
        return x.sin().cos()

    lib.impl("foo", foo_impl, "CompositeExplicitAutograd")

    x = torch.randn(3, requires_grad=True, device=device)
    with pytest.raises(AssertionError, match="incorrectly registered"):
        customop.opcheck(op, (x,), {}, test_utils="test_autograd_registration")


def test_autograd_registration_check_incorrect(d: Dispatcher, lib: Any) -> None:
    lib.define("foo(Tensor x) -> Tensor")
    op = _op(d)

    class Foo(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return torch.sin(x)

        @staticmethod
        def backward(ctx: Any, gx: Any) -> Any:
            return gx

    lib.impl("foo", Foo.apply, "CPU")
    lib.impl("foo", Foo.apply, "CUDA")

    x = torch.randn(3, requires_grad=True, device=device)
    with pytest.raises(AssertionError, match="incorrectly registered"):
        customop.opcheck(op, (x,), {}, test_utils="test_autograd_registration")


def test_opcheck(d: Dispatcher) -> None:
    # torch.ops.aten.sin, ported as customop.ops.aten.sin: the op defined in customop, with
    # torch.sin as its decomposition (so autograd flows through it, as through aten's).
    with customop.Library("aten", "FRAGMENT", dispatcher=d) as aten:
        aten.define("sin(Tensor self) -> Tensor")
        aten.impl("sin", torch.sin, "CompositeImplicitAutograd")
        sin = Ops(d).aten.sin.default

        x = torch.randn(3, requires_grad=True)
        with pytest.raises(ValueError, match="OpOverload"):
            customop.opcheck(torch.sin, (x,))
        with pytest.raises(ValueError, match="test_utils to be subset of"):
            customop.opcheck(sin, (x,), test_utils="blah")
        result = customop.opcheck(sin, (x,))

        assert result == {
            "test_schema": "SUCCESS",
            "test_autograd_registration": "SUCCESS",
            "test_faketensor": "SUCCESS",
            "test_aot_dispatch_dynamic": "SUCCESS",
        }

        result = customop.opcheck(sin, (x,), test_utils="test_schema")
        assert result == {"test_schema": "SUCCESS"}

        result = customop.opcheck(sin, (x,), test_utils=["test_schema", "test_faketensor"])
        assert result == {
            "test_schema": "SUCCESS",
            "test_faketensor": "SUCCESS",
        }

"""grad, value_and_grad and vjp: JAX's meaning, over functions of customop ops."""

from __future__ import annotations

import gc
import weakref
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from customop import AutogradError, Library, custom_op, empty_like, register_autograd
from customop.autograd import grad, value_and_grad, vjp
from customop.dispatch import Dispatcher
from tests.autograd.formulas import define

X = np.array([1.0, 2.0, 3.0])
Y = np.array([4.0, 5.0, 6.0])


@pytest.fixture
def nn(dispatcher: Dispatcher) -> SimpleNamespace:
    return define(dispatcher)


def test_grad_of_a_chain(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    def f(x: Any, y: Any) -> Any:
        return nn.total(nn.mul(nn.mul(x, x), y))

    np.testing.assert_allclose(grad(f, dispatcher=dispatcher)(X, Y), 2 * X * Y)
    gx, gy = grad(f, (0, 1), dispatcher=dispatcher)(X, Y)
    np.testing.assert_allclose(gx, 2 * X * Y)
    np.testing.assert_allclose(gy, X * X)
    value, gx = value_and_grad(f, dispatcher=dispatcher)(X, Y)
    assert value.shape == () and float(value) == pytest.approx(float(np.sum(X * X * Y)))
    np.testing.assert_allclose(gx, 2 * X * Y)


def test_has_aux_passes_the_aux_through(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    def f(x: Any) -> tuple[Any, str]:
        return nn.total(nn.exp(x)), "aux"

    g, aux = grad(f, has_aux=True, dispatcher=dispatcher)(X)
    assert aux == "aux"
    np.testing.assert_allclose(g, np.exp(X))
    (value, aux), g = value_and_grad(f, has_aux=True, dispatcher=dispatcher)(X)
    assert aux == "aux" and float(value) == pytest.approx(float(np.exp(X).sum()))


def test_an_op_used_many_times_accumulates(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    def f(x: Any) -> Any:
        y = nn.mul(x, x)
        return nn.total(nn.add(nn.add(y, x), nn.mul(y, x)))  # x^2 + x + x^3

    np.testing.assert_allclose(grad(f, dispatcher=dispatcher)(X), 2 * X + 1 + 3 * X**2)


def test_vjp_of_two_outputs(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    (s, _c), vjp_fn = vjp(nn.sincos, X, dispatcher=dispatcher)
    np.testing.assert_allclose(s, np.sin(X))
    (gx,) = vjp_fn((np.ones(3), 2 * np.ones(3)))
    np.testing.assert_allclose(gx, np.cos(X) - 2 * np.sin(X))
    # One output's cotangent left out (None) contributes nothing; vjp_fn runs again.
    (gx,) = vjp_fn((None, np.ones(3)))
    np.testing.assert_allclose(gx, -np.sin(X))


def test_an_unused_output_gets_zeros(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    q, k, v = (np.random.default_rng(0).standard_normal((1, 2, 3)) for _ in range(3))

    def loss(q: Any, k: Any, v: Any) -> Any:
        out, _lse = nn.flash_attn_forward(q, k, v, 0.5)
        return nn.total(out)

    dq, dk, dv = grad(loss, (0, 1, 2), dispatcher=dispatcher)(q, k, v)
    assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape
    np.testing.assert_allclose(dv.sum(), q.shape[1] * v.shape[-1])  # rows of p sum to one


def test_integer_and_bool_inputs_get_no_gradient(
    nn: SimpleNamespace, dispatcher: Dispatcher
) -> None:
    logp = np.log(np.full((3, 4), 0.25))
    labels = np.array([0, 3, 1])
    g_logp, g_labels = grad(nn.nll, (0, 1), dispatcher=dispatcher)(logp, labels)
    assert g_labels is None
    assert g_logp[0, 0] == pytest.approx(-1 / 3) and g_logp[0, 1] == 0
    _, vjp_fn = vjp(lambda b, x: nn.mul(x, x), np.array([True]), X, dispatcher=dispatcher)
    g_bool, g_x = vjp_fn(np.ones(3))
    assert g_bool is None
    np.testing.assert_allclose(g_x, 2 * X)


def test_outputs_that_do_not_depend_on_an_input(
    nn: SimpleNamespace, dispatcher: Dispatcher
) -> None:
    gx, gy = grad(lambda x, y: nn.total(nn.exp(y)), (0, 1), dispatcher=dispatcher)(X, Y)
    np.testing.assert_array_equal(gx, np.zeros(3))
    np.testing.assert_allclose(gy, np.exp(Y))
    # An output made by an op from no differentiated argument: zeros too.
    assert np.array_equal(grad(lambda x: nn.total(Y), dispatcher=dispatcher)(X), np.zeros(3))
    # vjp: each primal gets a cotangent, zeros where the output does not reach it.
    _, vjp_fn = vjp(lambda x, y: nn.exp(x), X, Y, dispatcher=dispatcher)
    gx, gy = vjp_fn(np.ones(3))
    np.testing.assert_allclose(gx, np.exp(X))
    np.testing.assert_array_equal(gy, np.zeros(3))


def test_needs_input_grad(dispatcher: Dispatcher) -> None:
    seen = []

    @custom_op("ng::mul", mutates_args=(), dispatcher=dispatcher)
    def mul(a: np.ndarray, b: np.ndarray, k: float) -> np.ndarray:
        return a * b * k

    def setup(ctx: Any, inputs: Any, output: Any) -> None:
        seen.append(ctx.needs_input_grad)
        ctx.save_for_backward(*inputs[:2])

    def backward(ctx: Any, g: Any) -> tuple[Any, Any, None]:
        a, b = ctx.saved_tensors
        return mul(g, b, 1.0), mul(g, a, 1.0), None

    mul.register_autograd(backward, setup_context=setup)
    grad(lambda a, b: mul(a, b, 2.0).sum(), dispatcher=dispatcher)  # never called
    vjp(lambda a: mul(a, Y, 2.0), X, dispatcher=dispatcher)
    vjp(lambda a, b: mul(a, b, 2.0), X, Y, dispatcher=dispatcher)
    assert seen == [(True, False, False), (True, True, False)]


def test_a_missing_formula_is_reported_before_any_backward_runs(dispatcher: Dispatcher) -> None:
    ran = []

    @custom_op("mf::double", mutates_args=(), dispatcher=dispatcher)
    def double(x: np.ndarray) -> np.ndarray:
        return x * 2

    @custom_op("mf::total", mutates_args=(), dispatcher=dispatcher)
    def total(x: np.ndarray) -> np.ndarray:
        return np.asarray(x.sum())

    total.register_autograd(lambda ctx, g: ran.append(1))
    with pytest.raises(AutogradError) as info:
        grad(lambda x: total(double(x)), dispatcher=dispatcher)(X)
    assert str(info.value) == (
        "grad: a gradient flows through 'mf::double', which has no autograd formula. customop "
        "differentiates op by op, and this op's kernel says nothing about its gradient. "
        "Register one with double.register_autograd(backward, setup_context=...) or "
        "customop.register_autograd('mf::double', ...), or make the op "
        "CompositeImplicitAutograd over ops that have formulas."
    )
    assert ran == []
    # Not needed (the gradient does not flow through it): no error.
    g = grad(lambda x, y: total(x), dispatcher=dispatcher)(X, double(Y))
    np.testing.assert_array_equal(g, np.zeros(3))


def test_a_composite_implicit_op_needs_no_formula(
    nn: SimpleNamespace, dispatcher: Dispatcher
) -> None:
    lib = Library("cia", "DEF", dispatcher=dispatcher)
    lib.define("square(Tensor x) -> Tensor")
    lib.impl("square", lambda x: nn.mul(x, x))  # CompositeImplicitAutograd
    square = dispatcher.find_schema_or_throw("cia::square")
    np.testing.assert_allclose(grad(lambda x: nn.total(square(x)), dispatcher=dispatcher)(X), 2 * X)
    lib.close()


def test_plain_arithmetic_between_ops_is_reported(
    nn: SimpleNamespace, dispatcher: Dispatcher
) -> None:
    with pytest.raises(
        AutogradError, match=r"grad: the output was made from a value grad .* numpy\.sum"
    ):
        grad(lambda x: np.sum(nn.exp(x)), dispatcher=dispatcher)(X)


def test_nested_grad(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    def f(x: Any) -> Any:
        return nn.total(nn.mul(nn.mul(x, x), x))  # sum x^3

    df = grad(f, dispatcher=dispatcher)
    ddf = grad(lambda x: nn.total(df(x)), dispatcher=dispatcher)
    np.testing.assert_allclose(ddf(X), 6 * X)
    dddf = grad(lambda x: nn.total(grad(lambda y: nn.total(df(y)), dispatcher=dispatcher)(x)),
                dispatcher=dispatcher)  # fmt: skip
    np.testing.assert_allclose(dddf(X), 6 * np.ones(3))


def test_grad_needs_a_scalar_output(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    with pytest.raises(TypeError, match=r"grad: fn must return a 0-d array .* shape \(3,\)"):
        grad(nn.exp, dispatcher=dispatcher)(X)


def test_argnums_out_of_range(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    with pytest.raises(ValueError, match="argnums 2 names an argument the call does not have"):
        grad(nn.total, 2, dispatcher=dispatcher)(X)


def test_the_same_array_twice_is_refused(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    with pytest.raises(ValueError, match="argument 1 is the same array object as an earlier"):
        grad(lambda a, b: nn.total(nn.mul(a, b)), (0, 1), dispatcher=dispatcher)(X, X)


@pytest.mark.parametrize(
    ("backward", "message"),
    [
        (
            lambda ctx, g: g,
            "bw::mul: backward returned 1 gradient(s), expected 3: one per input (a, b, k). "
            "Gradients are matched to inputs by position. Return a tuple with one entry per "
            "input, None for inputs without a gradient.",
        ),
        (
            lambda ctx, g: (g[:2], None, None),
            "bw::mul: backward returned a gradient with shape (2,) for input 'a' of shape (3,). "
            "A gradient has its input's shape. Reduce or reshape it in the backward (for a "
            "broadcast input, sum over the broadcast dimensions).",
        ),
        (
            lambda ctx, g: (g, None, 1.0),
            "bw::mul: backward returned a gradient for 'k', which is not a tensor input. Only "
            "tensors have gradients (torch refuses this too). Return None in its place.",
        ),
        (
            lambda ctx, g: (g.astype(np.int32), None, None),
            "bw::mul: backward returned a gradient of dtype int32 for input 'a' of dtype "
            "float64. A gradient has its input's dtype (JAX refuses a mismatch too), or it "
            "would change the dtype of everything it is added to. Cast it in the backward, "
            "e.g. grad.astype(x.dtype).",
        ),
        (
            lambda ctx, g: (g + 0j, None, None),
            "bw::mul: backward returned a gradient of dtype complex128 for input 'a' of dtype "
            "float64. A gradient has its input's dtype (JAX refuses a mismatch too), or it "
            "would change the dtype of everything it is added to. Cast it in the backward, "
            "e.g. grad.astype(x.dtype).",
        ),
    ],
    ids=["wrong-count", "wrong-shape", "non-tensor", "int32-grad", "complex-grad"],
)
def test_backward_results_are_checked(dispatcher: Dispatcher, backward: Any, message: str) -> None:
    @custom_op("bw::mul", mutates_args=(), dispatcher=dispatcher)
    def mul(a: np.ndarray, b: np.ndarray, k: float = 1.0) -> np.ndarray:
        return a * b * k

    mul.register_autograd(backward)
    _, vjp_fn = vjp(lambda a: mul(a, Y), X, dispatcher=dispatcher)
    with pytest.raises(AutogradError) as info:
        vjp_fn(np.ones(3))
    assert str(info.value) == message


def test_an_op_returning_its_input_is_refused(dispatcher: Dispatcher) -> None:
    @custom_op("al::same", mutates_args=(), dispatcher=dispatcher)
    def same(x: np.ndarray) -> np.ndarray:
        return x

    same.register_autograd(lambda ctx, g: g)
    with pytest.raises(AutogradError, match="al::same: output 0 is one of the op's input"):
        vjp(same, X, dispatcher=dispatcher)


def test_list_inputs(dispatcher: Dispatcher) -> None:
    @custom_op("ls::weighted", mutates_args=(), dispatcher=dispatcher)
    def weighted(xs: list[np.ndarray]) -> np.ndarray:
        return sum((i + 1) * x for i, x in enumerate(xs)) + np.zeros(3)

    @custom_op("ls::scale", mutates_args=(), dispatcher=dispatcher)
    def scale(x: np.ndarray, k: float) -> np.ndarray:
        return x * k

    scale.register_autograd(lambda ctx, g: (scale(g, ctx.k), None),
                            setup_context=lambda ctx, i, o: setattr(ctx, "k", i[1]))  # fmt: skip
    weighted.register_autograd(
        lambda ctx, g: [scale(g, float(i + 1)) for i in range(ctx.n)],  # a list: for xs
        setup_context=lambda ctx, inputs, output: setattr(ctx, "n", len(inputs[0])),
    )
    _, vjp_fn = vjp(lambda a, b: weighted([a, Y, b]), X, Y.copy(), dispatcher=dispatcher)
    ga, gb = vjp_fn(np.ones(3))
    np.testing.assert_allclose(ga, np.ones(3))
    np.testing.assert_allclose(gb, 3 * np.ones(3))


def test_the_fallback_records_only_inside_transforms(
    nn: SimpleNamespace, dispatcher: Dispatcher
) -> None:
    grad(lambda x: nn.total(x), dispatcher=dispatcher)(X)  # installs the engine
    table = dispatcher.dump_table(nn.total.op.handle)
    assert "AutogradCPU:" in table and "AutogradCPU:         fallthrough" in table
    assert empty_like(X).shape == X.shape


def test_a_dispatcher_used_by_a_transform_can_be_collected() -> None:
    def run() -> weakref.ref[Dispatcher]:
        dispatcher = Dispatcher()
        lib = Library("gone", "DEF", dispatcher=dispatcher)
        lib.define("neg(Tensor x) -> Tensor")
        lib.impl("neg", lambda x: -x, "CPU")
        register_autograd("gone::neg", lambda ctx, g: g, dispatcher=dispatcher)
        neg = dispatcher.find_schema_or_throw("gone::neg")
        _, vjp_fn = vjp(lambda x: neg(x), X, dispatcher=dispatcher)
        vjp_fn(np.ones(3))
        return weakref.ref(dispatcher)

    ref = run()
    gc.collect()
    assert ref() is None  # the engine keeps only a weak mark per dispatcher


def test_returning_an_argument(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    np.testing.assert_array_equal(
        grad(lambda x, y: y, dispatcher=dispatcher)(X, np.asarray(2.0)), np.zeros(3)
    )
    np.testing.assert_array_equal(grad(lambda x: x, dispatcher=dispatcher)(np.asarray(2.0)), 1.0)


def test_transforms_in_threads_record_only_their_own_calls(
    nn: SimpleNamespace, dispatcher: Dispatcher
) -> None:
    def work(scale: float) -> list[Any]:
        x = X * scale
        return [grad(lambda v: nn.total(nn.mul(v, v)), dispatcher=dispatcher)(x) for _ in range(20)]

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(work, [1.0, 3.0]))
    for scale, grads in zip([1.0, 3.0], results, strict=True):
        for g in grads:
            np.testing.assert_allclose(g, 2 * X * scale)


def test_a_list_gradient_is_checked_item_by_item(dispatcher: Dispatcher) -> None:
    @custom_op("ls::pair_sum", mutates_args=(), dispatcher=dispatcher)
    def pair_sum(xs: list[np.ndarray]) -> np.ndarray:
        return xs[0] + xs[1]

    pair_sum.register_autograd(lambda ctx, g: [g, g.astype(np.float32)])
    _, vjp_fn = vjp(lambda a, b: pair_sum([a, b]), X, Y, dispatcher=dispatcher)
    with pytest.raises(AutogradError, match=r"dtype float32 for input 'xs\[1\]' of dtype float64"):
        vjp_fn(np.ones(3))

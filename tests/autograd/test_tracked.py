"""Plain array code on the values a transform tracks: refused where the gradient would be wrong.

Every way plain code (operators, numpy functions, methods, conversions) can
turn a tracked array into another value goes through `Tracked`, so a value
made that way cannot silently enter an op as a constant: the op names it.
What does not change the gradient (shapes, masks, aux values, printing,
numpy inside a first-order formula) keeps working.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from customop import AutogradError, Tensor, custom_op, empty_like
from customop.autograd import grad, value_and_grad, vjp
from customop.dispatch import Dispatcher
from tests.autograd.formulas import define

X = np.array([1.0, 2.0, 3.0])
M = np.array([[1.0, 2.0], [3.0, 4.0]])


@pytest.fixture
def nn(dispatcher: Dispatcher) -> SimpleNamespace:
    return define(dispatcher)


# Each form: the loss (plain code between or before ops), the input, and what the
# message names: the op whose input was made by plain code, and how it was made.
FORMS: list[tuple[str, Callable[[SimpleNamespace], Callable[[Any], Any]], Any, str]] = [
    ("op-result-times-2", lambda nn: lambda x: nn.total(nn.mul(x, x) * 2), X,
     r"'nn::sum': its input 'x' was made from a value grad tracks by the \* operator"),
    ("input-times-1", lambda nn: lambda x: nn.total(nn.mul(x * 1, x)), X,
     r"'nn::mul': its input 'a' was made .* by the \* operator"),
    ("np-sin-first", lambda nn: lambda x: nn.total(nn.exp(np.sin(x))), X,
     r"'nn::exp': its input 'x' was made .* by numpy\.sin"),
    ("output-times-2", lambda nn: lambda x: nn.total(nn.mul(x, x)) * 2, X,
     r"the output was made from a value grad tracks by the \* operator"),
    ("np-sum-output", lambda nn: lambda x: np.sum(nn.exp(x)), X,
     r"the output was made .* by numpy\.sum"),
    ("op-result-plus-op-result", lambda nn: lambda x: nn.total(x) + nn.total(x), X,
     r"the output was made .* by the \+ operator"),
    ("divide", lambda nn: lambda x: nn.total(x / 2), X, r"'nn::sum'.* by the / operator"),
    ("transpose", lambda nn: lambda x: nn.total(nn.mul(x.T, x)), M, r"'nn::mul'.* by \.T"),
    ("index", lambda nn: lambda x: nn.total(nn.exp(x[0])), M, r"'nn::exp'.* by indexing"),
    ("index-scalar", lambda nn: lambda x: nn.total(nn.exp(x[0] * x)), X,
     r"'nn::exp'.* by the \* operator"),
    ("np-exp", lambda nn: lambda x: nn.total(np.exp(x)), X, r"'nn::sum'.* by numpy\.exp"),
    ("reshape", lambda nn: lambda x: nn.total(nn.exp(x.reshape(-1))), M,
     r"'nn::exp'.* by \.reshape\(\)"),
    ("np-reshape", lambda nn: lambda x: nn.total(np.reshape(x, (4,))), M,
     r"'nn::sum'.* by numpy\.reshape"),
    ("copy-method", lambda nn: lambda x: nn.total(nn.mul(x.copy(), x)), X, r"by \.copy\(\)"),
    ("np-copy", lambda nn: lambda x: nn.total(np.copy(x)), X, r"by numpy\.copy"),
    ("copy-module", lambda nn: lambda x: nn.total(copy.copy(x)), X, r"by copy\.copy"),
    ("concatenate", lambda nn: lambda x: nn.total(np.concatenate([x, x])), X,
     r"by numpy\.concatenate"),
    ("negate", lambda nn: lambda x: nn.total(-nn.exp(x)), X, r"by the unary - operator"),
    ("augmented", lambda nn: lambda x: _augmented(nn, x), X, r"by the \+ operator"),
    ("iterate", lambda nn: lambda x: nn.total(nn.exp(next(iter(x)))), M, r"by iterating"),
    ("ndarray-times-tracked", lambda nn: lambda x: nn.total(np.ones(3) * x), X,
     r"by numpy\.multiply"),
    ("list-input", lambda nn: lambda x: nn.total(nn.mul(*[x * 2, x])), X, r"'nn::mul'"),
    ("ufunc-method", lambda nn: lambda x: nn.total(np.add.accumulate(x)), X,
     r"by numpy\.add\.accumulate"),
]  # fmt: skip


def _augmented(nn: SimpleNamespace, x: Any) -> Any:
    y = nn.exp(x)
    y += 1  # a new value, not a change of y: arrays grad tracks are not changed in place
    return nn.total(y)


@pytest.mark.parametrize(
    ("make", "x", "message"), [f[1:] for f in FORMS], ids=[f[0] for f in FORMS]
)
def test_plain_code_between_ops_is_refused(
    nn: SimpleNamespace, dispatcher: Dispatcher, make: Any, x: Any, message: str
) -> None:
    with pytest.raises(AutogradError, match=message):
        grad(make(nn), dispatcher=dispatcher)(x)


def test_the_message_says_why_and_how_to_fix(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    with pytest.raises(AutogradError) as info:
        grad(lambda x: nn.total(nn.mul(x, x) * 2), dispatcher=dispatcher)(X)
    assert str(info.value) == (
        "grad: 'nn::sum': its input 'x' was made from a value grad tracks by the * operator, "
        "which grad does not record. Gradients flow only through ops, so that input would "
        "count as a constant and the gradient would be wrong. Make the computation an op "
        "with a formula (register_autograd), or use ops for it."
    )


def test_vjp_refuses_plain_code_too(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    with pytest.raises(AutogradError, match=r"vjp: 'nn::exp': its input 'x' was made"):
        vjp(lambda x: nn.exp(x * 2), X, dispatcher=dispatcher)
    _, vjp_fn = vjp(lambda x: nn.exp(x) * 2, X, dispatcher=dispatcher)
    with pytest.raises(AutogradError, match=r"vjp: output 0 was made .* by the \* operator"):
        vjp_fn(np.ones(3))


@pytest.mark.parametrize(
    ("form", "message"),
    [
        (lambda x: np.asarray(x), r"numpy\.asarray or numpy\.array"),
        (lambda x: np.array(x), r"numpy\.asarray or numpy\.array"),
        (lambda x: float(x[0]), r"float\(\) on a value grad tracks"),
        (lambda x: x.sum().item(), r"\.item\(\) on a value grad tracks"),
        (lambda x: x.tolist(), r"\.tolist\(\) on a value grad tracks"),
        (lambda x: x.data, r"\.data on a value grad tracks"),
        (lambda x: pickle.dumps(x), r"pickle\.dumps\(\) on a value grad tracks"),
        (lambda x: x.view(np.int64), r"\.view\(\) with a dtype"),
    ],
    ids=["asarray", "array", "float", "item", "tolist", "data", "pickle", "view-dtype"],
)
def test_leaving_the_array_world_is_refused(
    nn: SimpleNamespace, dispatcher: Dispatcher, form: Any, message: str
) -> None:
    def loss(x: Any) -> Any:
        form(nn.exp(x))
        return nn.total(x)

    with pytest.raises(AutogradError, match=message):
        grad(loss, dispatcher=dispatcher)(X)


def test_a_number_read_from_a_tracked_value_is_refused(
    nn: SimpleNamespace, dispatcher: Dispatcher
) -> None:
    # float(total(x)) would make the scale a constant: d/dx of sum(x) * x is not sum(x).
    with pytest.raises(AutogradError, match=r"float\(\) on a value grad tracks"):
        grad(lambda x: nn.total(nn.scale(x, float(nn.total(x)))), dispatcher=dispatcher)(X)


@pytest.mark.parametrize(
    "change",
    [
        lambda y: y.__setitem__(0, 0.0),
        lambda y: np.add(y, 1, out=y),
        lambda y: y.fill(0.0),
        lambda y: y.sort(),
    ],
    ids=["setitem", "out=", "fill", "sort"],
)
def test_changing_a_tracked_value_in_place_is_refused(
    nn: SimpleNamespace, dispatcher: Dispatcher, change: Any
) -> None:
    def loss(x: Any) -> Any:
        y = nn.exp(x)
        change(y)
        return nn.total(y)

    with pytest.raises(AutogradError, match="in place"):
        grad(loss, dispatcher=dispatcher)(X)


def test_what_does_not_change_the_gradient_works(
    nn: SimpleNamespace, dispatcher: Dispatcher
) -> None:
    seen: list[Any] = []

    def loss(x: Any) -> Any:
        mask = x > 1.5  # a bool array: no gradient flows through a comparison
        y = nn.mul(nn.exp(x), np.where(mask, 1.0, 0.0))
        seen.append((x.shape, x.dtype, x.ndim, len(x), repr(x)[:8], f"{nn.total(y):.1f}"))
        if nn.total(y) > 0:  # control flow on a comparison
            y = nn.mul(y, np.ones_like(x))  # a constant made from x's shape
        return nn.total(y), (x * 2, {"mean": np.mean(x)})  # aux: plain values

    (value, aux), g = value_and_grad(loss, has_aux=True, dispatcher=dispatcher)(X)
    np.testing.assert_allclose(g, np.exp(X) * (X > 1.5))
    assert float(value) == pytest.approx(float(np.sum(np.exp(X[1:]))))
    assert type(aux[0]) is np.ndarray and type(aux[1]["mean"]) is np.float64
    np.testing.assert_array_equal(aux[0], 2 * X)
    assert seen[0][:4] == ((3,), np.float64, 1, 3) and seen[0][4] == "Tracked("


def test_results_are_plain_arrays(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    value, g = value_and_grad(lambda x: nn.total(nn.exp(x)), dispatcher=dispatcher)(X)
    assert type(value) is np.ndarray and type(g) is np.ndarray
    out, vjp_fn = vjp(lambda x: (nn.exp(x), x), X, dispatcher=dispatcher)
    assert type(out[0]) is np.ndarray and out[1] is X
    (gx,) = vjp_fn((np.ones(3), np.ones(3)))
    assert type(gx) is np.ndarray
    np.testing.assert_allclose(gx, np.exp(X) + 1)


def test_a_numpy_formula_works_once_but_not_nested(dispatcher: Dispatcher) -> None:
    @custom_op("npf::cube", mutates_args=(), dispatcher=dispatcher)
    def cube(x: np.ndarray) -> np.ndarray:
        return x**3

    @custom_op("npf::total", mutates_args=(), dispatcher=dispatcher)
    def total(x: np.ndarray) -> np.ndarray:
        return np.asarray(x.sum())

    @custom_op("npf::expand_as", mutates_args=(), dispatcher=dispatcher)
    def expand_as(g: np.ndarray, x: np.ndarray) -> np.ndarray:
        return np.broadcast_to(g, x.shape).copy()

    cube.register_fake(lambda x: empty_like(x))
    total.register_autograd(
        lambda ctx, g: expand_as(g, ctx.x),
        setup_context=lambda ctx, inputs, output: setattr(ctx, "x", inputs[0]),
    )
    expand_as.register_autograd(lambda ctx, g: (total(g), None))
    # A backward in plain numpy: right for a first derivative...
    cube.register_autograd(
        lambda ctx, g: g * 3 * ctx.x**2,
        setup_context=lambda ctx, inputs, output: setattr(ctx, "x", inputs[0]),
    )
    first = grad(lambda x: total(cube(x)), dispatcher=dispatcher)
    np.testing.assert_allclose(first(X), 3 * X**2)
    # ...but not differentiable again: the outer grad would take it for a constant.
    with pytest.raises(AutogradError, match=r"the backward of 'npf::cube' returned a gradient "):
        grad(lambda x: total(first(x)), dispatcher=dispatcher)(X)


def test_a_copy_of_an_argument_is_refused(nn: SimpleNamespace, dispatcher: Dispatcher) -> None:
    with pytest.raises(AutogradError, match=r"by copy\.deepcopy"):
        grad(lambda x: nn.total(copy.deepcopy(x)), dispatcher=dispatcher)(X)


def test_tracked_values_outside_a_transform_are_plain(
    nn: SimpleNamespace, dispatcher: Dispatcher
) -> None:
    kept: list[Any] = []
    grad(lambda x: kept.append(x) or nn.total(x), dispatcher=dispatcher)(X)
    (x,) = kept
    # After the transform, nothing records: numpy and ops see the array inside.
    assert type(x * 2) is np.ndarray and type(np.asarray(x)) is np.ndarray
    np.testing.assert_allclose(nn.exp(x), np.exp(X))
    assert float(x[0]) == 1.0


def test_torch_code_on_tracked_tensors_is_refused(dispatcher: Dispatcher) -> None:
    torch = pytest.importorskip("torch")

    @custom_op("tt::total", mutates_args=(), dispatcher=dispatcher)
    def total(x: Tensor) -> Tensor:
        return x.sum()

    total.register_autograd(lambda ctx, g: ctx.x * 0 + g,
                            setup_context=lambda ctx, i, o: setattr(ctx, "x", i[0]))  # fmt: skip
    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    np.testing.assert_array_equal(grad(total, dispatcher=dispatcher)(x).numpy(), [1.0, 1.0])
    with pytest.raises(AutogradError, match=r"'tt::total': its input 'x' was made .* torch\.sin"):
        grad(lambda x: total(torch.sin(x)), dispatcher=dispatcher)(x)
    with pytest.raises(AutogradError, match=r"\.add_\(\) on a value grad tracks would change"):
        grad(lambda x: total(x.add_(1)), dispatcher=dispatcher)(x)


def test_empty_like_of_a_tracked_array_is_a_plain_constant(
    nn: SimpleNamespace, dispatcher: Dispatcher
) -> None:
    def loss(x: Any) -> Any:
        ones = empty_like(x, dispatcher=dispatcher)
        ones[...] = 1.0
        assert type(ones) is np.ndarray
        return nn.total(nn.mul(x, ones))

    np.testing.assert_array_equal(grad(loss, dispatcher=dispatcher)(X), np.ones(3))

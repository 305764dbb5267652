"""customop.vmap itself: torch.func.vmap's in_dims / out_dims, nesting, chunks, randomness."""

from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import customop
from customop import VmapError, VmapFallbackWarning, custom_op
from customop.dispatch import Dispatcher
from customop.vmap import BatchedArray
from tests.vmap.ops import RNG, define


@pytest.fixture
def ops(dispatcher: Dispatcher) -> SimpleNamespace:
    return define(dispatcher)


def _vmap(dispatcher: Dispatcher, fn: Any, *args: Any, **kwargs: Any) -> Any:
    return customop.vmap(fn, *args, dispatcher=dispatcher, **kwargs)


# -- in_dims and out_dims ----------------------------------------------------------------


def test_the_function_sees_one_example(dispatcher: Dispatcher, ops: SimpleNamespace) -> None:
    seen: list[Any] = []

    def f(x: Any, y: Any) -> Any:
        seen.append((type(x), x.shape, x.ndim, x.dtype, type(y), y.shape))
        return ops.sin(x)

    _vmap(dispatcher, f, in_dims=(1, None))(np.zeros((2, 5, 3)), np.zeros(4))
    assert seen == [(BatchedArray, (2, 3), 2, np.dtype("float64"), np.ndarray, (4,))]


@pytest.mark.parametrize(
    ("in_dims", "out_dims"),
    [((0,), 0), ((-1,), -1), ((1,), 2), ((-3,), (0,)), ((2,), -3)],
    ids=["0-0", "neg-neg", "1-2", "neg-tuple", "2-neg3"],
)
def test_in_dims_and_out_dims_move_the_batch_dimension(
    dispatcher: Dispatcher, ops: SimpleNamespace, in_dims: Any, out_dims: Any
) -> None:
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    got = _vmap(dispatcher, ops.sin, in_dims=in_dims, out_dims=out_dims)(x)
    out = out_dims[0] if isinstance(out_dims, tuple) else out_dims
    np.testing.assert_array_equal(got, np.moveaxis(np.sin(x), in_dims[0], out))


def test_nested_arguments_take_nested_in_dims(dispatcher: Dispatcher, ops: SimpleNamespace) -> None:
    rng = np.random.default_rng(1)
    x, y, z = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal((4, 3))

    def f(a: Any, pair: tuple[Any, Any], named: dict[str, Any]) -> Any:
        return ops.sum_list([a, pair[0], pair[1]]), {"kept": named["tag"]}

    out, extra = _vmap(dispatcher, f, in_dims=(0, (None, 1), {"tag": None}), out_dims=(0, None))(
        x, (y, z), {"tag": "kept"}
    )
    np.testing.assert_allclose(out, x + y + z.T)
    assert extra == {"kept": "kept"}


def test_one_int_stands_for_every_leaf_of_an_argument(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    x, y = np.ones((3, 2)), np.full((3, 2), 2.0)
    got = _vmap(dispatcher, lambda pair: ops.sum_list(list(pair)), in_dims=0)((x, y))
    np.testing.assert_array_equal(got, x + y)


def test_keyword_arguments_are_not_batched(dispatcher: Dispatcher, ops: SimpleNamespace) -> None:
    x = np.ones((3, 2))
    got = _vmap(dispatcher, lambda a, *, k: ops.shift(a, k))(x, k=1)
    np.testing.assert_array_equal(got, np.roll(x, 1, axis=-1))


def test_an_unbatched_output_is_broadcast_or_kept_with_none(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    w = np.arange(3.0)
    f = _vmap(
        dispatcher, lambda x: (ops.sin(w), ops.sin(w), 7), in_dims=0, out_dims=(1, None, None)
    )
    broadcast, kept, seven = f(np.zeros((4, 2)))
    np.testing.assert_array_equal(broadcast, np.repeat(np.sin(w)[:, None], 4, axis=1))
    np.testing.assert_array_equal(kept, np.sin(w))
    assert seven == 7


def test_none_arguments_and_outputs_are_empty_structures(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    got = _vmap(dispatcher, lambda x, nothing: (ops.sin(x), None))(np.zeros((2, 3)), None)
    assert got[1] is None
    np.testing.assert_array_equal(got[0], np.zeros((2, 3)))


def _message(in_dims: str, out_dims: str, what: str) -> str:
    return (
        f"vmap(f, in_dims={in_dims}, out_dims={out_dims}): {what}. in_dims and out_dims say, "
        "per argument and per output, where the batch dimension is (an int, or None for "
        "none), as in torch.func.vmap. Fix them to match the call."
    )


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(((0,), 0, (np.ones(2), np.ones(2)),
                      "in_dims has 1 entries for 2 arguments"), id="length"),
        pytest.param(([0, 0], 0, (np.ones(2), np.ones(2)),
                     "in_dims must be an int or a tuple, got list"), id="list"),
        pytest.param(((0, 0), 0, (np.ones(2), 3.0), "in_dim=0 is given for a float, but only "
                     "arrays can be batched; use None as its in_dim"), id="not-an-array"),
        pytest.param(((2, None), 0, (np.ones((2, 2)), 1.0), "in_dim=2 is given for an array of "
                     "2 dimension(s); it must satisfy -2 <= in_dim < 2"), id="out-of-range"),
        pytest.param(((0, 0), 0, (np.ones(2), np.ones(3)), "the batched arguments have sizes "
                     "[2, 3] in their batch dimensions"), id="sizes"),
        pytest.param(((None, None), 0, (np.ones(2), np.ones(2)), "no argument is batched "
                     "(every in_dim is None)"), id="none-batched"),
        pytest.param((((0, 0), None), 0, (np.ones(2), np.ones(2)), "in_dims[0] is (0, 0), but "
                     "the value there is not a container"), id="structure"),
        pytest.param(((0, 0), (0, 0), (np.ones(2), np.ones(2)), "out_dims is (0, 0), but the "
                     "value there is not a container"), id="out-structure"),
        pytest.param(((0, 0), None, (np.ones(2), np.ones(2)), "f returned a batched array for "
                     "an output with out_dim None"), id="out-none"),
    ],
)  # fmt: skip
def test_in_dims_and_out_dims_that_do_not_fit_are_refused(
    dispatcher: Dispatcher, ops: SimpleNamespace, case: tuple[Any, Any, tuple[Any, ...], str]
) -> None:
    in_dims, out_dims, args, what = case

    def f(a: Any, b: Any) -> Any:
        return ops.sin(a)

    with pytest.raises(ValueError) as raised:
        _vmap(dispatcher, f, in_dims=in_dims, out_dims=out_dims)(*args)
    assert str(raised.value) == _message(repr(in_dims), repr(out_dims), what)


def test_a_non_array_output_with_an_int_out_dim_is_refused(dispatcher: Dispatcher) -> None:
    def f(a: Any) -> Any:
        return 3

    with pytest.raises(ValueError, match=r"f returned a int for an output with out_dim 0; only"):
        _vmap(dispatcher, f)(np.ones(2))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"randomness": "sometimes"}, "vmap: randomness='sometimes' is not one of 'error', "
         "'different', 'same'. It says how random ops behave across the batch. Pass one of "
         "those."),
        ({"chunk_size": 0}, "vmap: chunk_size=0 is not a positive int. It is how many examples "
         "run at once. Pass an int >= 1, or None for the whole batch."),
    ],
    ids=["randomness", "chunk-size"],
)  # fmt: skip
def test_bad_options_are_refused_when_vmap_is_called(options: Any, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        customop.vmap(np.sin, **options)
    assert str(raised.value) == message


# -- nesting, chunks ---------------------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(outer=st.integers(-3, 2), inner=st.integers(-2, 1), out=st.integers(-2, 1))
def test_two_levels_with_any_dims(outer: int, inner: int, out: int) -> None:
    d = Dispatcher()
    customop.tensor.install_backends(d)
    o = define(d)
    x = np.random.default_rng(2).standard_normal((2, 3, 4))
    f = customop.vmap(
        customop.vmap(lambda row: o.softmax(row, -1), in_dims=inner, out_dims=out, dispatcher=d),
        in_dims=outer,
        dispatcher=d,
    )
    moved = np.moveaxis(x, outer, 0)  # (B1, ...), then the inner batch dimension
    inner_first = np.moveaxis(moved, inner % 2 + 1, 1)
    expected = np.moveaxis(_softmax_last(inner_first), 1, out % 2 + 1)
    np.testing.assert_allclose(f(x), expected, rtol=1e-12)


def _softmax_last(x: Any) -> Any:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_nested_levels_batching_different_arguments(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 6, 5))
    # outer: a's and b's first axis; inner: b's axis 1 only (a is the same for it)
    f = _vmap(dispatcher, _vmap(dispatcher, ops.matmul, in_dims=(None, 1)), in_dims=(0, 0))
    expected = np.stack([np.stack([a[i] @ b[i][:, j] for j in range(6)]) for i in range(2)])
    np.testing.assert_allclose(f(a, b), expected, rtol=1e-12)


def test_a_loop_fallback_inside_two_levels(dispatcher: Dispatcher) -> None:
    @custom_op("vt::cube", mutates_args=(), dispatcher=dispatcher)
    def cube(x: np.ndarray) -> np.ndarray:
        return x**3

    x = np.arange(24.0).reshape(2, 3, 4)
    with pytest.warns(VmapFallbackWarning, match=r"vt::cube has no vmap rule.*\(12 calls here\)"):
        got = _vmap(dispatcher, _vmap(dispatcher, cube, in_dims=1), in_dims=2)(x)
    np.testing.assert_array_equal(got, np.moveaxis(x**3, (2, 1), (0, 1)))


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 10], ids=lambda c: f"chunk{c}")
def test_chunks_give_the_whole_batch_result(
    dispatcher: Dispatcher, ops: SimpleNamespace, chunk_size: int
) -> None:
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((5, 3, 4)), rng.standard_normal(4)
    f = lambda a, b: (ops.layer_norm(a, b, None, 1e-5), ops.total(a))  # noqa: E731
    whole = _vmap(dispatcher, f, in_dims=(0, None), out_dims=(1, 0))(x, w)
    chunked = _vmap(dispatcher, f, in_dims=(0, None), out_dims=(1, 0), chunk_size=chunk_size)
    for got, expected in zip(chunked(x, w), whole, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_chunks_under_grad(dispatcher: Dispatcher, ops: SimpleNamespace) -> None:
    x = np.random.default_rng(5).standard_normal((5, 3))
    loss = lambda a: ops.total(ops.sin(a))  # noqa: E731
    chunked = _vmap(dispatcher, customop.autograd.grad(loss, dispatcher=dispatcher), chunk_size=2)
    np.testing.assert_allclose(chunked(x), np.cos(x), rtol=1e-12)
    outer = customop.autograd.grad(
        lambda a: ops.total(_vmap(dispatcher, loss, chunk_size=2)(a)), dispatcher=dispatcher
    )
    np.testing.assert_allclose(outer(x), np.cos(x), rtol=1e-12)


# -- randomness ------------------------------------------------------------------------


def test_a_random_op_is_refused_with_randomness_error(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    with pytest.raises(VmapError) as raised:
        _vmap(dispatcher, ops.noise_like)(np.zeros((3, 2)))
    assert str(raised.value) == (
        "vmap: vt::noise_like is a random op (tagged 'nondeterministic_seeded') called inside "
        "<vmap level 0 of noise_like: batch 3> with randomness='error'. Whether each example "
        "gets its own random values is ambiguous (torch refuses this too). Pass "
        "randomness='different' (independent per example) or 'same' (one draw for the batch) "
        "to vmap, or call the op outside vmap."
    )


@pytest.mark.parametrize("batched", [True, False], ids=["batched-input", "unbatched-input"])
def test_randomness_different_and_same(
    dispatcher: Dispatcher, ops: SimpleNamespace, batched: bool
) -> None:
    RNG["rng"] = np.random.default_rng(6)
    x, w = np.zeros((4, 3)), np.zeros(3)
    f = (lambda a: ops.noise_like(a)) if batched else (lambda a: ops.noise_like(w))
    different = _vmap(dispatcher, f, randomness="different")(x)
    same = _vmap(dispatcher, f, randomness="same")(x)
    assert different.shape == same.shape == (4, 3)
    assert len({tuple(row) for row in different}) == 4
    assert len({tuple(row) for row in same}) == 1


def test_a_random_op_without_rule_loops_for_different_and_refuses_same(
    dispatcher: Dispatcher,
) -> None:
    @custom_op("vt::jitter", mutates_args=(), dispatcher=dispatcher, tags="nondeterministic_seeded")
    def jitter(x: np.ndarray) -> np.ndarray:
        return x + np.random.default_rng().standard_normal(x.shape)

    x = np.zeros((4, 3))
    with pytest.warns(VmapFallbackWarning):
        rows = _vmap(dispatcher, jitter, randomness="different")(x)
    assert len({tuple(row) for row in rows}) == 4
    with pytest.raises(VmapError, match="vt::jitter is a random op without a vmap rule, batched"):
        _vmap(dispatcher, jitter, randomness="same")(x)


def test_randomness_same_with_chunks_is_refused(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    with pytest.raises(VmapError, match="randomness='same' and chunk_size"):
        _vmap(dispatcher, ops.noise_like, randomness="same", chunk_size=2)(np.zeros((4, 3)))


def test_nested_levels_with_different_randomness_refuse_a_random_op(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    inner = _vmap(dispatcher, ops.noise_like, randomness="same")
    with pytest.raises(VmapError, match=r"batched by nested vmaps with randomness "):
        _vmap(dispatcher, inner, randomness="different")(np.zeros((2, 3, 4)))


# -- the fallback, decompositions, mutation --------------------------------------------


def test_the_fallback_warns_once_per_op(dispatcher: Dispatcher) -> None:
    @custom_op("vt::twice", mutates_args=(), dispatcher=dispatcher)
    def twice(x: np.ndarray) -> np.ndarray:
        return x * 2

    with pytest.warns(VmapFallbackWarning) as caught:
        _vmap(dispatcher, twice)(np.ones((3, 2)))
    assert str(caught[0].message) == (
        "vmap: vt::twice has no vmap rule, so vmap calls it once per example (3 calls here) "
        "and stacks the results. That is correct but slow. Register a rule with "
        "twice.register_vmap(fn) or customop.register_vmap('vt::twice', fn)."
    )
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(_vmap(dispatcher, twice)(np.ones((3, 2))), np.full((3, 2), 2))


def test_a_composite_implicit_op_decomposes_into_batched_ops(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    lib = customop.Library("vtc", "DEF", dispatcher=dispatcher)
    lib.define("sin_softmax(Tensor x) -> Tensor")
    lib.impl("sin_softmax", lambda x: ops.softmax(ops.sin(x), -1), "CompositeImplicitAutograd")
    x = np.random.default_rng(7).standard_normal((3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback: the decomposition's ops have rules
        op = dispatcher.find_schema_or_throw("vtc::sin_softmax")
        got = _vmap(dispatcher, op, in_dims=1)(x)
    np.testing.assert_allclose(got, _softmax_last(np.sin(x.T)), rtol=1e-12)
    lib.close()


def test_writes_into_an_unbatched_argument_are_refused(dispatcher: Dispatcher) -> None:
    @custom_op("vt::add_", mutates_args=("x",), dispatcher=dispatcher)
    def add_(x: np.ndarray, y: np.ndarray) -> None:
        x += y

    add_.register_vmap(lambda info, in_dims, x, y: (add_(x, y), None))
    x = np.zeros(3)
    with pytest.raises(VmapError) as raised:
        _vmap(dispatcher, add_, in_dims=(None, 0))(x, np.ones((2, 3)))
    assert str(raised.value) == (
        "vmap: vt::add_ writes into 'x', which is not batched like the other arguments of the "
        "call. The results of every example cannot be written into an array without their "
        "batch dimension (torch refuses this too). Batch 'x' as well, or call a functional "
        "(out-of-place) op."
    )
    np.testing.assert_array_equal(x, np.zeros(3))


def test_a_mutating_op_without_a_rule_is_refused(dispatcher: Dispatcher) -> None:
    @custom_op("vt::zero_", mutates_args=("x",), dispatcher=dispatcher)
    def zero_(x: np.ndarray) -> None:
        x[...] = 0

    with pytest.raises(VmapError, match=r"vt::zero_ writes into 'x' and has no vmap rule"):
        _vmap(dispatcher, zero_)(np.ones((2, 3)))


def test_writes_inside_two_levels_are_refused(dispatcher: Dispatcher, ops: SimpleNamespace) -> None:
    inner = _vmap(dispatcher, lambda x: ops.scale_(x, 2.0), out_dims=None)
    with pytest.raises(VmapError, match=r"writes into 'x' inside nested vmaps that both batch"):
        _vmap(dispatcher, inner, out_dims=None)(np.ones((2, 3, 4)))


# -- wrong rules, escapes, transforms that cannot compose --------------------------------


@pytest.mark.parametrize(
    ("returns", "rule", "what"),
    [
        pytest.param(1, lambda info, in_dims, x: x, "returned ndarray, not a pair (outputs, "
                     "out_dims). vmap matches", id="not-a-pair"),
        pytest.param(1, lambda info, in_dims, x: ((x, x), 0), "returned 2 output(s), but the op "
                     "has 1", id="count"),
        pytest.param(2, lambda info, in_dims, x: ((x.min(-1), x.max(-1), x), (0, 0)),
                     "returned 3 output(s), but the op has 2", id="count-two"),
        pytest.param(2, lambda info, in_dims, x: ((x.min(-1), x.max(-1)), (0, 0, 0)),
                     "returned out_dims (0, 0, 0) with 3 entries for 2 output(s)", id="out-dims"),
    ],
)  # fmt: skip
def test_a_rule_returning_the_wrong_structure_is_named(
    dispatcher: Dispatcher, returns: int, rule: Any, what: str
) -> None:
    if returns == 1:

        @custom_op("vt::one", mutates_args=(), dispatcher=dispatcher)
        def target(x: np.ndarray) -> np.ndarray:
            return x

    else:

        @custom_op("vt::bounds", mutates_args=(), dispatcher=dispatcher)
        def target(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return x.min(-1), x.max(-1)

    target.register_vmap(rule)
    with pytest.raises(VmapError) as raised:
        _vmap(dispatcher, target)(np.ones((2, 3)))
    message = str(raised.value)
    assert message.startswith(f"vmap: the rule of {target.name} (<VmapRule {target.name} <lambda>")
    assert what in message
    assert message.endswith(".")


def test_a_rule_whose_out_dim_is_not_the_batch_is_named(dispatcher: Dispatcher) -> None:
    @custom_op("vt::flat", mutates_args=(), dispatcher=dispatcher)
    def flat(x: np.ndarray) -> np.ndarray:
        return x.reshape(-1)

    flat.register_vmap(lambda info, in_dims, x: (flat(x), 0))
    with pytest.raises(VmapError) as raised:
        _vmap(dispatcher, flat)(np.ones((2, 3)))
    assert str(raised.value) == (
        "vmap: the batching of vt::flat gave output 0 of shape (6,) with out_dim 0, which is not "
        "a dimension of size 2 (the batch size). out_dim says where the batch dimension of an "
        "output is. Return the out_dim where the rule put the batch dimension."
    )


def test_a_batched_value_kept_after_its_vmap_is_refused(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    kept: list[Any] = []

    def f(x: Any) -> Any:
        kept.append(x)
        return ops.sin(x)

    _vmap(dispatcher, f)(np.ones((2, 3)))
    with pytest.raises(VmapError) as raised:
        ops.sin(kept[0])
    assert str(raised.value) == (
        "vmap: vt::sin got a batched value of <vmap level 0 of f: batch 2>, which has ended. A "
        "batched value belongs to the vmap call that made it; outside it, it has no batch to "
        "stand for. Return it from the vmapped function (vmap unbatches its outputs) instead "
        "of keeping it."
    )


def test_a_vmap_inside_a_grad_inside_a_vmap_is_refused(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    loss = lambda a: ops.total(_vmap(dispatcher, ops.sin)(a))  # noqa: E731
    f = _vmap(dispatcher, customop.autograd.grad(loss, dispatcher=dispatcher))
    with pytest.raises(VmapError, match=r"vmap\(sin\) runs inside a grad inside <vmap level 0"):
        f(np.ones((2, 3, 4)))


def test_a_rule_computing_with_plain_arrays_under_grad_is_refused(dispatcher: Dispatcher) -> None:
    @custom_op("vt::double", mutates_args=(), dispatcher=dispatcher)
    def double(x: np.ndarray) -> np.ndarray:
        return x * 2

    double.register_autograd(lambda ctx, g: g * 2)
    double.register_vmap(lambda info, in_dims, x: (np.moveaxis(x, in_dims[0], 0) * 2, 0))
    o = define(dispatcher)
    x = np.ones((2, 3))
    np.testing.assert_array_equal(_vmap(dispatcher, double)(x), x * 2)  # fine without grad
    outer = customop.autograd.grad(
        lambda a: o.total(_vmap(dispatcher, double)(a)), dispatcher=dispatcher
    )
    with pytest.raises(VmapError, match=r"the rule of vt::double .* computed an output from a "):
        outer(x)


# -- plain array code on batched values -----------------------------------------------------


def test_elementwise_arithmetic_is_exact(dispatcher: Dispatcher, ops: SimpleNamespace) -> None:
    rng = np.random.default_rng(8)
    x, plain = rng.standard_normal((4, 3)), rng.standard_normal((2, 3))

    def f(a: Any) -> Any:
        # plain has more dimensions than an example: broadcasting must not meet the batch
        return ops.sin((a * 2 + 1) / plain - np.cos(a) ** 2 + abs(-a) + (a > 0))

    got = _vmap(dispatcher, f, out_dims=1)(x)
    expected = np.stack(
        [np.sin((r * 2 + 1) / plain - np.cos(r) ** 2 + abs(-r) + (r > 0)) for r in x], axis=1
    )
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_arithmetic_between_two_levels_is_exact(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    a, b = np.arange(6.0).reshape(2, 3), np.arange(4.0)
    outer = _vmap(dispatcher, lambda x: _vmap(dispatcher, lambda y: ops.sin(x * y))(b))
    np.testing.assert_allclose(outer(a), np.sin(a[:, None, :] * b[None, :, None]))


def test_basic_indexing_and_iteration_are_exact(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    x = np.arange(24.0).reshape(2, 3, 4)

    def f(a: Any) -> Any:
        rows = list(a)  # iterates an example's first dimension
        return ops.sum_list([a[0, 1:3], a[-1, ::2][..., None][:, 0][:2], rows[1][1:3]])

    got = _vmap(dispatcher, f, in_dims=2)(x)
    expected = np.stack([r[0, 1:3] + r[-1, ::2][:2] + r[1][1:3] for r in np.moveaxis(x, 2, 0)])
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        pytest.param(lambda a: np.sum(a), "vmap: numpy.sum on a batched value. Computed on the "
                     "physical array, it would mix the examples of the batch. Use a customop op "
                     "(with a vmap rule) for it, or compute it outside vmap.", id="np-sum"),
        pytest.param(lambda a: np.add.reduce(a), "vmap: numpy's add.reduce on a batched value",
                     id="ufunc-reduce"),
        pytest.param(lambda a: np.sin(a, out=np.empty(3)), "vmap: numpy's sin on a batched "
                     "value with out= or where=", id="ufunc-out"),
        pytest.param(lambda a: np.asarray(a), "vmap: converting a batched value to a plain "
                     "array", id="asarray"),
        pytest.param(lambda a: a.sum(), "vmap: a batched value has no attribute 'sum'",
                     id="method"),
        pytest.param(lambda a: 1 if a[0] > 0 else 0, "vmap: bool() of a batched value. Each "
                     "example has its own value", id="branch"),
        pytest.param(lambda a: float(a[0]), "vmap: float() of a batched value", id="float"),
        pytest.param(lambda a: a.__setitem__(0, 1.0), "vmap: writing into a batched value",
                     id="write"),
        pytest.param(lambda a: a[np.array([0, 1])], "vmap: indexing a batched value with "
                     "ndarray", id="fancy-index"),
        pytest.param(lambda a: a @ a, "unsupported operand", id="matmul-operator"),
    ],
)  # fmt: skip
def test_plain_array_code_that_would_mix_examples_is_refused(
    dispatcher: Dispatcher, code: Any, message: str
) -> None:
    with pytest.raises((VmapError, AttributeError, TypeError)) as raised:
        _vmap(dispatcher, code)(np.ones((2, 3)))
    assert str(raised.value).startswith(message) or message in str(raised.value)


# -- trace ------------------------------------------------------------------------------------


def test_a_vmapped_function_traces_to_the_batched_ops(
    dispatcher: Dispatcher, ops: SimpleNamespace
) -> None:
    x = np.random.default_rng(9).standard_normal((3, 2, 4))
    f = _vmap(dispatcher, lambda a: ops.softmax(ops.sin(a), -1), in_dims=1)
    graph = customop.trace(f, x, dispatcher=dispatcher)
    assert str(graph) == (
        "def forward(a: f64[3, 2, 4]):\n"
        "    sin = ops.vt.sin.default(a)                    # f64[3, 2, 4]\n"
        "    moveaxis = ops.vt.moveaxis.default(sin, 1, 0)  # f64[2, 3, 4]\n"
        "    softmax = ops.vt.softmax.default(moveaxis, 2)  # f64[2, 3, 4]\n"
        "    return softmax"
    )
    np.testing.assert_allclose(graph(x), f(x), rtol=1e-12)

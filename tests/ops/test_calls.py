"""Calling ops: binding, defaults, and the TypeError every kind of bad argument gets."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from customop import Tensor, custom_op
from customop.dispatch import Dispatcher
from customop.library import Library, OpOverload, Ops

SCHEMA = (
    "mylib::every(Tensor x, Tensor? bias, Tensor[] xs, int n, SymInt s, float f, bool b, "
    "str name, Scalar alpha, ScalarType dtype, Device device, int? maybe, int[2] pair, "
    "*, float scale=1.) -> Tensor"
)
GOOD: dict[str, Any] = {
    "x": np.zeros(2),
    "bias": None,
    "xs": [np.zeros(1)],
    "n": 1,
    "s": 2,
    "f": 0.5,
    "b": True,
    "name": "a",
    "alpha": 2,
    "dtype": np.float32,
    "device": "cpu",
    "maybe": None,
    "pair": [1, 2],
}


@pytest.fixture
def every(dispatcher: Dispatcher, ops: Ops) -> Iterator[OpOverload]:
    with Library("mylib", "DEF", dispatcher=dispatcher) as lib:
        lib.define(SCHEMA)
        lib.impl("every", lambda *args, **kwargs: (args, kwargs), "CPU")
        yield ops.mylib.every.default


def _call(op: OpOverload, **changes: Any) -> Any:
    return op(**{**GOOD, **changes})


def test_good_call_binds_positionally_with_defaults(every: OpOverload) -> None:
    args, kwargs = _call(every)
    assert len(args) == 13 and kwargs == {"scale": 1.0}
    args, kwargs = every(*GOOD.values(), scale=3.0)
    assert kwargs == {"scale": 3.0}


def test_signature_shows_the_schema(every: OpOverload) -> None:
    signature = inspect.signature(every)
    assert list(signature.parameters)[:3] == ["x", "bias", "xs"]
    assert signature.parameters["scale"].kind is inspect.Parameter.KEYWORD_ONLY
    assert signature.parameters["scale"].default == 1.0


@pytest.mark.parametrize(
    ("name", "value", "position", "expected", "got", "hint"),
    [
        (
            "x",
            3,
            "position 0",
            "Tensor",
            "int 3",
            "Pass an array of a registered type (numpy.ndarray is built in).",
        ),
        (
            "bias",
            "b",
            "position 1",
            "Tensor?",
            "str 'b'",
            "Pass an array of a registered type (numpy.ndarray is built in) or None.",
        ),
        (
            "xs",
            [1],
            "position 2",
            "Tensor[]",
            "list [1]",
            "Pass a list or tuple whose elements are Tensor.",
        ),
        ("n", 1.5, "position 3", "int", "float 1.5", "Pass a value of type int."),
        ("n", True, "position 3", "int", "bool True", "Pass a value of type int."),
        ("s", "2", "position 4", "SymInt", "str '2'", "Pass a value of type SymInt."),
        ("f", "x", "position 5", "float", "str 'x'", "Pass a value of type float."),
        ("b", 1, "position 6", "bool", "int 1", "Pass a value of type bool."),
        ("name", 1, "position 7", "str", "int 1", "Pass a value of type str."),
        ("alpha", "2", "position 8", "Scalar", "str '2'", "Pass a value of type Scalar."),
        (
            "dtype",
            "float33",  # a name that is no dtype ("float32" is one: see tests/ports)
            "position 9",
            "ScalarType",
            "str 'float33'",
            "Pass a dtype, e.g. numpy.float32.",
        ),
        ("device", 0, "position 10", "Device", "int 0", "Pass a value of type Device."),
        ("maybe", "1", "position 11", "int?", "str '1'", "Pass a value of type int or None."),
        (
            "pair",
            [1, "2"],
            "position 12",
            "int[2]",
            "list [1, '2']",
            "Pass a list or tuple whose elements are int.",
        ),
        ("scale", None, "keyword-only", "float", "NoneType None", "Pass a value of type float."),
    ],
    ids=lambda v: v if isinstance(v, str) and " " not in v else None,
)
def test_wrong_argument_names_op_parameter_position_type_value_schema(  # noqa: PLR0917
    every: OpOverload, name: str, value: Any, position: str, expected: str, got: str, hint: str
) -> None:
    with pytest.raises(TypeError) as excinfo:
        _call(every, **{name: value})
    assert str(excinfo.value) == (
        f"ops.mylib.every.default: argument {name!r} ({position}) expects {expected}, got {got}. "
        f"The schema is {SCHEMA.replace('scale=1.', 'scale=1.')}. {hint}"
    )


def test_fixed_size_int_list_accepts_one_int(every: OpOverload) -> None:
    args, _ = _call(every, pair=3)
    assert args[12] == 3


def test_numpy_scalars_count_as_python_numbers(every: OpOverload) -> None:
    _call(every, n=np.int64(1), f=np.float32(0.5), b=np.bool_(True), alpha=np.float64(1))


def test_missing_argument(every: OpOverload) -> None:
    values = dict(GOOD)
    del values["n"]
    with pytest.raises(TypeError) as excinfo:
        every(**values)
    assert str(excinfo.value) == (
        f"ops.mylib.every.default: missing required argument 'n' (position 3, int). "
        f"The schema is {SCHEMA}. Pass a value for it."
    )


def test_too_many_arguments(every: OpOverload) -> None:
    with pytest.raises(TypeError) as excinfo:
        every(*GOOD.values(), 1.0)
    assert str(excinfo.value) == (
        f"ops.mylib.every.default: takes 13 positional argument(s) but 14 were given. "
        f"The schema is {SCHEMA}. Pass keyword-only arguments by name, and drop the extra ones."
    )


def test_unknown_keyword_names_the_schema_and_a_close_match(every: OpOverload) -> None:
    with pytest.raises(TypeError) as excinfo:
        _call(every, sclae=2.0)
    assert str(excinfo.value) == (
        "ops.mylib.every.default: got an unexpected keyword argument 'sclae'. "
        f"The schema is {SCHEMA}. Did you mean 'scale'?"
    )


def test_unknown_keyword_without_a_close_match_lists_the_arguments(
    dispatcher: Dispatcher, ops: Ops
) -> None:
    with Library("kw", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x, *, int n=1) -> Tensor")
        lib.impl("f", lambda x, n=1: x, "CPU")
        with pytest.raises(TypeError) as excinfo:
            ops.kw.f(np.ones(1), zzz=3)
    assert str(excinfo.value) == (
        "ops.kw.f.default: got an unexpected keyword argument 'zzz'. The schema is "
        "kw::f(Tensor x, *, int n=1) -> Tensor. Pass only the schema's arguments: x, n."
    )


def test_unknown_keyword_after_the_fast_path_was_filled(every: OpOverload) -> None:
    _call(every)
    _call(every)
    with pytest.raises(TypeError, match="unexpected keyword argument 'extra'"):
        _call(every, extra=1)


@pytest.mark.parametrize("filled", [False, True], ids=["cold", "cache-filled"])
@pytest.mark.parametrize(
    ("twice", "name"),
    [
        (lambda op, a: op(a, a, x=a), "x"),
        (lambda op, a: op(a, y=a, x=a), "x"),
        (lambda op, a: op(a, a, 3, m=4), "m"),
    ],
    ids=["required", "keywords-after-a-positional", "defaulted"],
)
def test_an_argument_given_twice_is_explained_against_the_schema(
    dispatcher: Dispatcher, ops: Ops, twice: Any, name: str, filled: bool
) -> None:
    schema = "twice::f(Tensor x, Tensor y, int m=0, *, int n=1) -> Tensor"
    with Library("twice", "DEF", dispatcher=dispatcher) as lib:
        lib.define(schema.removeprefix("twice::"))
        lib.impl("f", lambda x, y, m=0, *, n=1: x, "CPU")
        a = np.ones(1)
        for op in (ops.twice.f, ops.twice.f.default):
            if filled:
                op(a, a)
            with pytest.raises(TypeError) as excinfo:
                twice(op, a)
            assert str(excinfo.value) == (
                "ops.twice.f.default: pass each argument once, by position or by name "
                "(its parameters are (x, y, m, *, n)); this call to twice::f() got multiple "
                f"values for argument '{name}'"
            )


def test_a_custom_op_explains_an_argument_given_twice(dispatcher: Dispatcher) -> None:
    @custom_op("twice::g", mutates_args=(), dispatcher=dispatcher)
    def g(x: Tensor, y: Tensor) -> Tensor:
        return x

    a = np.ones(1)
    with pytest.raises(TypeError) as excinfo:
        g(a, y=a, x=a)  # type: ignore[misc]
    assert str(excinfo.value) == (
        "twice::g: pass each argument once, by position or by name (its parameters are "
        "(x, y)); this call to twice::g() got multiple values for argument 'x'"
    )


def test_fast_path_still_checks_after_caching(dispatcher: Dispatcher, ops: Ops) -> None:
    with Library("fast", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x, int n) -> Tensor")
        lib.impl("f", lambda x, n: x * n, "CPU")
        op = ops.fast.f.default
        for _ in range(3):
            np.testing.assert_array_equal(op(np.ones(1), 2), [2.0])
        with pytest.raises(TypeError, match="argument 'n'"):
            op(np.ones(1), 2.5)
        with pytest.raises(TypeError, match="missing required argument 'n'"):
            op(np.ones(1))


@pytest.fixture
def lists(dispatcher: Dispatcher, ops: Ops) -> Iterator[OpOverload]:
    with Library("lists", "DEF", dispatcher=dispatcher) as lib:
        lib.define("cat(Tensor[] xs, int[] sizes, *, bool flag=False) -> Tensor")
        lib.impl("cat", lambda xs, sizes, flag=False: (len(xs), list(sizes), flag), "CPU")
        yield ops.lists.cat.default


def _slow_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from customop.ops._callgen import CallCode

    calls: list[int] = []
    slow = CallCode.slow

    def counting(self: CallCode, *args: Any) -> Any:
        calls.append(1)
        return slow(self, *args)

    monkeypatch.setattr(CallCode, "slow", counting)
    return calls


def test_list_arguments_take_the_fast_path(
    lists: OpOverload, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = _slow_calls(monkeypatch)
    x = np.zeros(1)
    for _ in range(3):
        assert lists([x, x], [1, 2], flag=True) == (2, [1, 2], True)
    assert len(slow) == 1  # the first call filled the cache
    assert lists((x, x), [1, 2]) == (2, [1, 2], False)  # a tuple: another type
    assert len(slow) == 2


@pytest.mark.parametrize(
    ("xs", "sizes", "message"),
    [
        ([np.zeros(1), 3], [1, 2], "argument 'xs'"),
        ([np.zeros(1), np.zeros(1)], [1, 2.5], "argument 'sizes'"),
        ([np.zeros(1), np.zeros(1)], [1, True], "argument 'sizes'"),
        ([np.zeros(1)], 3, "argument 'sizes'"),
    ],
    ids=["non-tensor-item", "float-in-int-list", "bool-in-int-list", "not-a-list"],
)
def test_fast_path_still_checks_list_items(
    lists: OpOverload, xs: list[Any], sizes: Any, message: str
) -> None:
    x = np.zeros(1)
    lists([x, x], [1, 2])
    lists([x, x], [1, 2])  # now cached
    with pytest.raises(TypeError, match=message):
        lists(xs, sizes)


def test_list_mutated_between_calls_is_checked_again(lists: OpOverload) -> None:
    x = np.zeros(1)
    xs = [x, x]
    lists(xs, [1])
    lists(xs, [1])
    xs[1] = "not a tensor"
    with pytest.raises(TypeError, match="argument 'xs'"):
        lists(xs, [1])


def test_list_length_may_change(lists: OpOverload) -> None:
    x = np.zeros(1)
    assert lists([x], [1])[0] == 1
    assert lists([x, x, x], [1, 2, 3]) == (3, [1, 2, 3], False)


def test_same_type_lists_of_any_length_share_the_fast_path(
    lists: OpOverload, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = _slow_calls(monkeypatch)
    x = np.zeros(1)
    lists([x, x], [1, 2])
    assert len(slow) == 1
    assert lists([x] * 30, [1, 2, 3]) == (30, [1, 2, 3], False)
    assert len(slow) == 1  # one item type, any length: the same entry
    assert lists([], [])[0] == 0  # an empty list has no item type: checked again
    assert len(slow) == 2


def test_mixed_item_types_are_cached_per_position(
    lists: OpOverload, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = _slow_calls(monkeypatch)
    x = np.zeros(1)
    for _ in range(3):
        assert lists([x, x], [1, np.int64(2)]) == (2, [1, 2], False)
    assert len(slow) == 1
    lists([x, x], [np.int64(2), 1])  # other item types in order: a miss
    assert len(slow) == 2
    with pytest.raises(TypeError, match="argument 'sizes'"):
        lists([x, x], [1, 2.5])


def test_empty_lists_have_their_own_entry(
    lists: OpOverload, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = _slow_calls(monkeypatch)
    x = np.zeros(1)
    for _ in range(3):
        assert lists([], []) == (0, [], False)
    assert len(slow) == 1  # an empty list matches an entry made by an empty list
    assert lists([x], [1]) == (1, [1], False)  # items now: a miss
    assert len(slow) == 2
    with pytest.raises(TypeError, match="argument 'sizes'"):
        lists([], [1.5])


def test_a_mixed_entry_never_passes_a_same_type_list_unchecked(
    lists: OpOverload, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = _slow_calls(monkeypatch)
    x = np.zeros(1)
    lists([x], [1, np.int64(2)])  # the entry holds (int, int64)
    assert lists([x], [1, 2]) == (1, [1, 2], False)  # all int: a miss, checked
    assert len(slow) == 2
    with pytest.raises(TypeError, match="argument 'sizes'"):
        lists([x], [1.5, 2.5])


def test_ops_with_many_list_arguments_check_every_list(
    dispatcher: Dispatcher, ops: Ops, monkeypatch: pytest.MonkeyPatch
) -> None:
    # More lists than the generated code nests item loops for: tuple comparisons.
    names = [f"l{i}" for i in range(10)]
    with Library("manylists", "DEF", dispatcher=dispatcher) as lib:
        lib.define(f"f({', '.join(f'int[] {n}' for n in names)}) -> int")
        lib.impl("f", lambda *ls: sum(map(len, ls)), "CPU")
        f = ops.manylists.f.default
        slow = _slow_calls(monkeypatch)
        args = [[1, 2]] * 10
        assert f(*args) == f(*args) == 20
        assert len(slow) == 1
        with pytest.raises(TypeError, match="argument 'l9'"):
            f(*args[:9], [1, "2"])


def test_registration_empties_filled_caches(
    dispatcher: Dispatcher, ops: Ops, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Library("fill", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", lambda x: "cpu", "CPU")
        op = ops.fill.f.default
        x = np.zeros(1)
        slow = _slow_calls(monkeypatch)
        assert op(x) == op(x) == "cpu"
        assert len(slow) == 1
        with Library("fill", "IMPL", "CPU", dispatcher=dispatcher) as override:
            with pytest.warns(Warning, match="overrid"):
                override.impl("f", lambda x: "override")
            assert op(x) == "override"  # not the cached kernel
            assert len(slow) == 2
        assert op(x) == "cpu"
        assert len(slow) == 3


def test_fast_path_respects_a_task_that_outlives_its_block(
    dispatcher: Dispatcher, ops: Ops
) -> None:
    import asyncio

    from customop.dispatch import DispatchKey, include_keys

    with Library("ctx", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x) -> str")
        lib.impl("f", lambda x: "cpu", "CPU")
        lib.impl("f", lambda x: "fake", "Fake")
        op = ops.ctx.f.default
        x = np.zeros(1)

        async def main() -> list[str]:
            release = asyncio.Event()
            seen = [op(x), op(x)]  # the cache now holds the default context's kernel

            async def child() -> str:
                await release.wait()
                return str(op(x))

            with include_keys(DispatchKey.Fake):
                task = asyncio.ensure_future(child())
                await asyncio.sleep(0)
            seen += [op(x), op(x)]
            release.set()
            seen.append(await task)
            return seen

        assert asyncio.run(main()) == ["cpu", "cpu", "cpu", "cpu", "fake"]


def test_tracebacks_show_the_generated_call_code(dispatcher: Dispatcher, ops: Ops) -> None:
    import traceback

    def boom(x: Any, *, n: int = 1) -> Any:
        raise ValueError("boom")

    with Library("tb", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x, *, int n=1) -> Tensor")
        lib.impl("f", boom, "CPU")
        op = ops.tb.f.default
        for _ in range(2):  # the slow path, then the fast one
            with pytest.raises(ValueError) as excinfo:
                op(np.zeros(1))
            frames = traceback.extract_tb(excinfo.value.__traceback__)
            generated = [f for f in frames if f.filename == "<customop generated tb::f>"]
            assert generated and generated[0].line
        assert generated[0].line == "return _co_c[3](x, n=n)"


def test_alternating_argument_types_stay_on_the_fast_path(
    dispatcher: Dispatcher, ops: Ops, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Library("alt", "DEF", dispatcher=dispatcher) as lib:
        lib.define("f(Tensor x, Scalar y) -> Tensor")
        lib.impl("f", lambda x, y: x + y, "CPU")
        op = ops.alt.f.default
        slow = _slow_calls(monkeypatch)
        x = np.zeros(1)
        for _ in range(3):
            assert op(x, 1)[0] == 1.0
            assert op(x, 0.5)[0] == 0.5
        assert len(slow) == 2  # one per set of types
        assert op(x, True)[0] == 1.0  # a third set displaces the older entry
        assert op(x, 1)[0] == 1.0
        assert len(slow) == 4

"""customop's call objects of an op registered in torch: the eager fast path and torch's path."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import customop
import customop.torch
from customop.adapter import installed_call
from customop.dispatch import Dispatcher, DispatchKey, exclude_keys
from tests.torch.subclasses import FunctionTensor


class _Seen(TorchDispatchMode):
    """Records the ops torch dispatches."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


class _Functions(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


class _Sub(torch.Tensor):
    pass


@pytest.fixture
def counted(ns: str, dispatcher: Dispatcher, track: list[Any]) -> tuple[Any, list[int]]:
    calls: list[int] = []

    def body(x: Any, y: Any) -> Any:
        calls.append(1)
        return x + y

    op = customop.custom_op(
        f"{ns}::add",
        body,
        mutates_args=(),
        schema="(Tensor x, Tensor y) -> Tensor",
        dispatcher=dispatcher,
    )
    op.register_fake(lambda x, y: customop.empty_like(x))
    track.append(op)
    track.append(customop.torch.register(op))
    return op, calls


def test_fast_path_runs_the_kernel_without_torch_dispatch(
    counted: tuple[Any, list[int]], ns: str
) -> None:
    op, calls = counted
    x, y = torch.ones(2), torch.ones(2)
    op(x, y)  # fills the cache
    with _Seen() as seen:  # a mode blocks the fast path: torch sees the op
        assert torch.equal(op(x, y), x + y)
    assert f"{ns}.add.default" in seen.ops
    for _ in range(3):
        assert torch.equal(op(x, y), x + y)
    assert installed_call(op).cache[1] is torch.Tensor  # the cached fast path
    assert len(calls) == 5


def test_function_mode_sees_the_op(counted: tuple[Any, list[int]], ns: str) -> None:
    op, _ = counted
    x = torch.ones(2)
    op(x, x)
    with _Functions() as mode:
        op(x, x)
    assert any(f"{ns}.add" in name for name in mode.seen)


def test_subclass_goes_through_torch(counted: tuple[Any, list[int]], ns: str) -> None:
    op, calls = counted
    x = torch.ones(2).as_subclass(_Sub)
    out = op(x, torch.ones(2))
    assert torch.equal(out, torch.full((2,), 2.0))
    assert len(calls) == 1


@pytest.mark.parametrize("where", ["first", "second", "both"], ids=str)
@pytest.mark.parametrize("spelling", ["object", "customop.ops", "overload"], ids=str)
def test_a_subclass_call_is_handed_to_torch_in_the_generated_code(
    ns: str, track: list[Any], monkeypatch: pytest.MonkeyPatch, spelling: str, where: str
) -> None:
    """Issue #29: nothing in front of torch's op, not even the slow path's frame."""
    calls: list[int] = []

    def body(x: Any, y: Any) -> Any:
        calls.append(1)
        return x + y

    op = customop.custom_op(
        f"{ns}::add", body, mutates_args=(), schema="(Tensor x, Tensor y) -> Tensor"
    )
    track += [op, customop.torch.register(op)]
    packet = getattr(customop.ops, ns).add
    call = {"object": op, "customop.ops": packet, "overload": packet.default}[spelling]
    code = installed_call(call)

    def no_slow_path(*args: Any) -> Any:
        raise AssertionError("the call took the slow path")

    monkeypatch.setattr(code, "slow", no_slow_path)
    FunctionTensor.seen.clear()
    sub = torch.ones(2).as_subclass(FunctionTensor)
    args = {
        "first": (sub, torch.ones(2)),
        "second": (torch.ones(2), sub),
        "both": (sub, sub),
    }[where]
    for _ in range(2):
        out = call(*args)
        assert type(out) is FunctionTensor
        assert torch.equal(out.as_subclass(torch.Tensor), torch.full((2,), 2.0))
    assert sum(f"{ns}.add" in name for name in FunctionTensor.seen) == 2
    with pytest.raises(AssertionError, match="slow path"):  # the patch is in effect
        call(torch.ones(2), torch.ones(2))
    assert len(calls) == 2


def test_a_subclass_call_binding_cannot_explain_gets_customops_error(
    counted: tuple[Any, list[int]], ns: str
) -> None:
    op, calls = counted
    x = torch.ones(1).as_subclass(FunctionTensor)
    with pytest.raises(TypeError, match=rf"{ns}::add.*missing.*'y'"):
        op(x)
    with pytest.raises(TypeError, match=rf"{ns}::add.*'z'"):
        op(x, x, z=1)
    with pytest.raises(TypeError, match=rf"{ns}::add"):
        op(x, x, x)
    assert calls == []


def test_a_subclass_call_under_customops_local_keys_stays_in_customop(
    counted: tuple[Any, list[int]], ns: str
) -> None:
    op, calls = counted
    FunctionTensor.seen.clear()
    x = torch.ones(2).as_subclass(FunctionTensor)
    with exclude_keys(DispatchKey.Autograd):
        out = op(x, torch.ones(2))
    assert torch.equal(out.as_subclass(torch.Tensor), torch.full((2,), 2.0))
    assert not any(f"{ns}.add" in name for name in FunctionTensor.seen)  # torch never saw the op
    assert len(calls) == 1


def test_torch_calls_skip_the_torch_ops_python_frame(
    counted: tuple[Any, list[int]], ns: str
) -> None:
    """The hand-over calls what ``OpOverload.__call__`` calls; pinned here, so that a
    torch whose ``__call__`` does more fails this test instead of losing it."""
    op, _ = counted
    overload = getattr(torch.ops, ns).add.default
    assert "return self._op(*args, **kwargs)" in inspect.getsource(type(overload).__call__)
    assert installed_call(op).mirror.torch_entry is overload._op


def test_grad_inputs_go_through_torch_autograd(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    op = customop.custom_op(
        f"{ns}::mul",
        lambda x, y: x * y,
        mutates_args=(),
        schema="(Tensor x, Tensor y) -> Tensor",
        dispatcher=dispatcher,
    )
    track.append(op)
    track.append(customop.torch.register(op))
    x = torch.ones(2, requires_grad=True)
    out = op(x, torch.ones(2))
    assert out.grad_fn is not None  # torch's op, with torch's (warning) autograd fallback
    with torch.no_grad():
        assert op(x, torch.ones(2)).grad_fn is None  # grad off: the fast path again


@pytest.mark.parametrize("spelling", ["object", "overload", "torch"], ids=str)
def test_mutated_arguments_bump_the_version(
    ns: str, dispatcher: Dispatcher, track: list[Any], spelling: str
) -> None:
    def fill(x: Any, value: float) -> None:
        x.fill_(value)  # the kernel runs under torch's version counting too: count once more

    op = customop.custom_op(
        f"{ns}::fill",
        fill,
        mutates_args=("x",),
        schema="(Tensor(a0!) x, float value) -> ()",
        dispatcher=dispatcher,
    )
    op.register_fake(lambda x, value: None)
    track.append(op)
    track.append(customop.torch.register(op))
    call = {"object": op, "overload": op.op, "torch": getattr(torch.ops, ns).fill.default}[spelling]
    x = torch.zeros(3)
    for round_ in range(3):  # the first call fills the cache, the next ones take it
        before = x._version
        call(x, float(round_))
        assert x._version >= before + 2  # fill_'s own bump, and the op's
        assert torch.equal(x, torch.full((3,), float(round_)))


def test_numpy_arrays_keep_customop_semantics(counted: tuple[Any, list[int]]) -> None:
    np = pytest.importorskip("numpy")
    op, calls = counted
    a = np.ones(2)
    assert (op(a, a) == 2).all()
    assert len(calls) == 1


def test_wrong_arguments_get_customop_errors(counted: tuple[Any, list[int]], ns: str) -> None:
    op, _ = counted
    with pytest.raises(TypeError, match=rf"{ns}::add: argument 'y'"):
        op(torch.ones(1), "no")
    with pytest.raises(TypeError, match="missing"):
        op(torch.ones(1))
    with pytest.raises(TypeError, match="z"):
        op(torch.ones(1), torch.ones(1), z=1)


@pytest.mark.parametrize("filled", [False, True], ids=["cold", "cache-filled"])
def test_an_argument_given_twice_is_explained(
    counted: tuple[Any, list[int]], ns: str, filled: bool
) -> None:
    op, calls = counted
    x = torch.ones(1)
    if filled:
        op(x, x)
    with pytest.raises(TypeError) as excinfo:
        op(x, x, x=x)
    assert str(excinfo.value) == (
        f"{ns}::add: pass each argument once, by position or by name (its parameters are "
        f"(x, y)); this call to {ns}::add() got multiple values for argument 'x'"
    )
    assert len(calls) == int(filled)


def test_objects_are_safe_after_removal(ns: str, track: list[Any]) -> None:
    op = customop.custom_op(
        f"{ns}::f", lambda x: x + 1, mutates_args=(), schema="(Tensor x) -> Tensor"
    )
    track.append(op)
    handle = customop.torch.register(op)
    packet = getattr(customop.ops, ns).f
    x = torch.zeros(1)
    for call in (op, packet, packet.default):
        assert torch.equal(call(x), x + 1)
    call_code = installed_call(op)
    handle.remove()
    # customop's objects got their own call back; the generated code no longer holds
    # the torch op (calling a torch op object after its removal crashes torch 2.13).
    assert installed_call(op) is None
    assert call_code.namespace["_co_op"] is call_code.plain
    for call in (op, packet, packet.default, getattr(customop.ops, ns).f):
        assert torch.equal(call(x), x + 1)


def test_redefinition_while_registered(ns: str, track: list[Any]) -> None:
    first = customop.custom_op(
        f"{ns}::f", lambda x: x + 1, mutates_args=(), schema="(Tensor x) -> Tensor"
    )
    handle = customop.torch.register(f"{ns}::f")
    second = customop.custom_op(
        f"{ns}::f", lambda x: x + 2, mutates_args=(), schema="(Tensor x) -> Tensor"
    )
    track += [second]
    x = torch.zeros(1)
    with pytest.raises(customop.RegistrationError, match="replaced"):
        first(x)
    with pytest.raises(customop.RegistrationError, match="replaced"):
        first(torch.zeros(1).as_subclass(FunctionTensor))  # not handed to the new definition
    assert torch.equal(second(x), x + 2)  # specialized with the torch-aware call
    assert torch.equal(getattr(torch.ops, ns).f(x), x + 2)  # the name is still wanted
    handle.remove()
    assert torch.equal(second(x), x + 2)  # safe: customop's own path after removal
    assert torch.equal(second(torch.ones(1, requires_grad=True)), torch.full((1,), 3.0))


@pytest.mark.parametrize(
    ("cuda_kernel", "expected"),
    [(False, True), (True, False)],
    ids=["one-kernel", "cuda-kernel-differs"],
)
def test_one_kernel_serves_torch_devices_despite_a_dask_fallback(
    ns: str, dispatcher: Dispatcher, track: list[Any], cuda_kernel: bool, expected: bool
) -> None:
    # dask's fallback on PrivateUse3 ("dask") is no torch device: it must not make a
    # CompositeExplicitAutograd body look per-device (which cost a customop dispatch
    # per torch call and a device check per fast-path call).
    pytest.importorskip("dask")
    from customop.dask._install import install
    from customop.torch._mirror import torch_uniform

    track.append(install(dispatcher))
    op = customop.custom_op(
        f"{ns}::ident",
        lambda x: x.clone(),
        mutates_args=(),
        schema="(Tensor x) -> Tensor",
        dispatcher=dispatcher,
    )
    track.append(op)
    if cuda_kernel:
        op.register_kernel("cuda", lambda x: x.clone())
    track.append(customop.torch.register(op))
    assert (torch_uniform(op.operator) is not None) is expected
    x = torch.ones(3)
    assert torch.equal(getattr(torch.ops, ns).ident(x), x)
    assert torch.equal(op(x), x)


def test_many_arguments_compare_their_types_as_one_tuple(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    # From _GROUPED_TYPES arguments on, the entry holds one tuple of argument types;
    # the function-mode check asks has_torch_function of the first tensor argument,
    # here an optional one given as None.
    calls: list[int] = []

    def body(  # noqa: PLR0917 -- the schema's nine positional parameters
        bias: Any, x: Any, a: float, b: float, c: int, d: int, e: bool, f: bool, g: Any
    ) -> Any:
        calls.append(1)
        return x * a + (0 if bias is None else bias)

    schema = (
        "(Tensor? bias, Tensor x, float a, float b, int c, int d, bool e, bool f, "
        "Tensor? g) -> Tensor"
    )
    op = customop.custom_op(
        f"{ns}::many", body, mutates_args=(), schema=schema, dispatcher=dispatcher
    )

    def fake(  # noqa: PLR0917
        bias: Any, x: Any, a: float, b: float, c: int, d: int, e: bool, f: bool, g: Any
    ) -> Any:
        return customop.empty_like(x)

    op.register_fake(fake)
    track.append(op)
    track.append(customop.torch.register(op))
    x = torch.ones(2)
    rest = (2.0, 0.5, 1, 2, True, False, None)
    for _ in range(3):
        assert torch.equal(op(None, x, *rest), x * 2)
    cache = installed_call(op).cache
    assert cache[1] == (type(None), torch.Tensor, float, float, int, int, bool, bool, type(None))
    with _Functions() as mode:
        assert torch.equal(op(None, x, *rest), x * 2)
    assert any(f"{ns}.many" in name for name in mode.seen)
    with _Seen() as seen:
        assert torch.equal(op(None, x, *rest), x * 2)
    assert f"{ns}.many.default" in seen.ops
    assert torch.equal(op(x, x, *rest), x * 3)  # another type: the slow path, then cached
    with pytest.raises(TypeError, match=rf"{ns}::many: argument 'c'"):
        op(None, x, 2.0, 0.5, 1.5, 2, True, False, None)
    assert len(calls) == 6


def test_many_arguments_with_a_list_check_its_items(
    ns: str, dispatcher: Dispatcher, track: list[Any]
) -> None:
    def body(  # noqa: PLR0917 -- the schema's eight positional parameters
        xs: Any, a: float, b: float, c: int, d: int, e: bool, f: bool, g: int
    ) -> Any:
        return xs[0] * a

    def fake(  # noqa: PLR0917
        xs: Any, a: float, b: float, c: int, d: int, e: bool, f: bool, g: int
    ) -> Any:
        return customop.empty_like(xs[0])

    schema = "(Tensor[] xs, float a, float b, int c, int d, bool e, bool f, int g) -> Tensor"
    op = customop.custom_op(
        f"{ns}::listed", body, mutates_args=(), schema=schema, dispatcher=dispatcher
    )
    op.register_fake(fake)
    track.append(op)
    track.append(customop.torch.register(op))
    x = torch.ones(2)
    rest = (2.0, 0.5, 1, 2, True, False, 3)
    for _ in range(2):
        assert torch.equal(op([x, x], *rest), x * 2)
    cache = installed_call(op).cache
    assert cache[1][0] is list
    assert cache[4] is torch.Tensor  # the item type both items share
    out = op([x, torch.ones(2, requires_grad=True)], *rest)  # an item needs grad: torch's path
    assert out.grad_fn is not None
    with _Seen() as seen:
        op([x, x], *rest)
    assert f"{ns}.listed.default" in seen.ops

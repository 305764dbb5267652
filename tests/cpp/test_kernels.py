"""Each test kernel on numpy and torch, with Python fake impls, opcheck, trace and Dask."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import customop
from customop.exceptions import KernelError

torch = pytest.importorskip("torch")


def _np(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float64)


#: name -> (args builder from an array maker, expected result builder)
CASES: dict[str, tuple[Callable[[Callable[..., Any]], tuple[Any, ...]], Any]] = {
    "add": (lambda mk: (mk(1.0, 2.0), mk(3.0, 4.0)), _np(4.0, 6.0)),
    "mul": (lambda mk: (mk(1.0, 2.0), mk(3.0, 4.0)), _np(3.0, 8.0)),
    "layer_norm": (lambda mk: (mk(1.0, 3.0), 0.0), _np(-1.0, 1.0)),
    "axpy": (lambda mk: (mk(1.0, 2.0), mk(1.0, 1.0), 3.0), _np(4.0, 7.0)),
    "axpy_none": (lambda mk: (mk(1.0, 2.0),), _np(1.0, 2.0)),
    "sum_all": (lambda mk: ([mk(1.0, 2.0), mk(3.0, 4.0), mk(5.0, 6.0)],), _np(9.0, 12.0)),
    "split_sign": (lambda mk: (mk(-1.0, 2.0),), (_np(0.0, 2.0), _np(-1.0, 0.0))),
}
MAKERS: dict[str, Callable[..., Any]] = {
    "numpy": lambda *v: np.array(v, dtype=np.float64),
    "torch": lambda *v: torch.tensor(v, dtype=torch.float64),
}


def _as_numpy(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_as_numpy(v) for v in value)
    return value.numpy() if isinstance(value, torch.Tensor) else value


@pytest.mark.parametrize("kind", sorted(MAKERS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_kernel_on_each_array_type(ops: Any, case: str, kind: str) -> None:
    make_args, expected = CASES[case]
    args = make_args(MAKERS[kind])
    result = getattr(ops, case.removesuffix("_none"))(*args)
    outputs = result if isinstance(result, tuple) else (result,)
    wanted = expected if isinstance(expected, tuple) else (expected,)
    for out, want in zip(outputs, wanted, strict=True):
        assert type(out) is type(args[0] if case != "sum_all" else args[0][0])
        np.testing.assert_allclose(_as_numpy(out), want)


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_in_place_kernel_mutates_the_callers_array(ops: Any, kind: str) -> None:
    x = MAKERS[kind](1.0, 2.0)
    assert ops.add_(x, MAKERS[kind](10.0, 20.0)) is None
    np.testing.assert_allclose(_as_numpy(x), [11.0, 22.0])


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_int_list_and_float_arguments_with_defaults(ops: Any, kind: str) -> None:
    x = MAKERS[kind](1.0, 1.0, 1.0, 1.0).reshape(2, 2)
    np.testing.assert_allclose(_as_numpy(ops.scale_rows(x)), [[1.5, 1.5], [2.5, 2.5]])
    got = ops.scale_rows(x, [3], offset=0.0)
    np.testing.assert_allclose(_as_numpy(got), [[3.0, 3.0], [3.0, 3.0]])


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_scalar_type_argument_and_new_dtype(ops: Any, kind: str) -> None:
    x = MAKERS[kind](1.5, 2.5)
    out = ops.cast(x, customop.float32)
    assert str(out.dtype).removeprefix("torch.") == "float32"
    np.testing.assert_allclose(_as_numpy(out), [1.5, 2.5])


def test_the_inferred_schema_is_torchs_spelling(ops: Any) -> None:
    assert str(ops.mul.default.schema) == "cpptest::mul(Tensor _0, Tensor _1) -> Tensor _0"


def _line_of(text: str) -> int:
    lines = (Path(__file__).parent / "kernels.cpp").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_sources_are_the_cpp_lines(ops: Any) -> None:
    info = {op.name: op for op in customop.dispatcher.snapshot().operators}["cpptest::add"]
    def_line = _line_of('m.def("add(')
    assert info.source == f"{Path(__file__).parent / 'kernels.cpp'}:{def_line}"
    impl_line = _line_of('m.impl("add", &add)')
    assert any(k.source.endswith(f"kernels.cpp:{impl_line}") for k in info.kernels if k.source)


@pytest.mark.parametrize(
    ("op", "args", "message"),
    [
        ("checked_sqrt", (_np(1.0, -1.0),), "element 1 is negative (-1)"),
        ("throws", (_np(1.0),), "index 7 is out of range"),
        ("add", (np.arange(3), np.arange(3)), "expected a float32 or float64 tensor, got int64"),
        ("add", (_np(1.0, 2.0, 3.0)[::2], _np(1.0, 2.0)), "argument 'a' is not contiguous"),
        ("checked_sqrt", (np.ones(2, np.float32),), "data_ptr<float64>() called on a float32"),
    ],
    ids=["check", "cpp-exception", "wrong-dtype", "non-contiguous", "data-ptr-dtype"],
)
def test_kernel_errors_name_op_source_and_message(
    ops: Any, op: str, args: tuple[Any, ...], message: str
) -> None:
    with pytest.raises(KernelError) as caught:
        getattr(ops, op)(*args)
    text = str(caught.value)
    assert text.startswith(f"cpptest::{op}: the C++ kernel at ")
    assert "kernels.cpp:" in text and message in text
    assert "\n" not in text
    assert caught.value.op == f"cpptest::{op}"


def test_a_torch_tensor_on_another_device_is_refused(ops: Any) -> None:
    meta = torch.empty(2, device="meta", dtype=torch.float64)
    with pytest.raises((KernelError, NotImplementedError)):
        ops.add(meta, meta)


@pytest.fixture
def fakes() -> Iterator[None]:
    def like(x: Any, *rest: Any, **kw: Any) -> Any:
        return customop.empty_like(x)

    fns = [
        customop.register_fake("cpptest::add", lambda a, b: customop.empty_like(a)),
        customop.register_fake("cpptest::add_", lambda x, y: None),
        customop.register_fake("cpptest::layer_norm", lambda x, eps=1e-05: customop.empty_like(x)),
        customop.register_fake(
            "cpptest::split_sign", lambda x: (customop.empty_like(x), customop.empty_like(x))
        ),
        customop.register_fake(
            "cpptest::axpy", lambda x, y=None, alpha=1.0: customop.empty_like(x)
        ),
        customop.register_fake("cpptest::sum_all", lambda xs: customop.empty_like(xs[0])),
        customop.register_fake(
            "cpptest::scale_rows", lambda x, factors=(1, 2), offset=0.5: customop.empty_like(x)
        ),
    ]
    yield
    for fn in fns:
        customop.handle_of(fn).remove()


OPCHECK_CASES = {
    "add": lambda: (_np(1.0, 2.0), _np(3.0, 4.0)),
    "add_": lambda: (_np(1.0, 2.0), _np(3.0, 4.0)),
    "layer_norm": lambda: (_np(1.0, 2.0, 4.0).reshape(1, 3),),
    "split_sign": lambda: (_np(-1.0, 2.0),),
    "axpy": lambda: (_np(1.0, 2.0), _np(1.0, 1.0)),
    "sum_all": lambda: ([_np(1.0), _np(2.0)],),
    "scale_rows": lambda: (np.ones((2, 2)),),
}


@pytest.mark.parametrize("name", sorted(OPCHECK_CASES))
def test_fake_mode_and_opcheck(ops: Any, fakes: None, name: str) -> None:
    args = OPCHECK_CASES[name]()
    report = customop.opcheck(getattr(ops, name).default, args)
    assert set(report.values()) == {"SUCCESS"}
    with customop.FakeTensorMode() as mode:
        fake_args = tuple(
            [mode.from_real(a) for a in arg] if isinstance(arg, list) else mode.from_real(arg)
            for arg in args
        )
        result = getattr(ops, name)(*fake_args)
    first = result[0] if isinstance(result, tuple) else result
    if first is not None:
        assert isinstance(first, customop.FakeTensor)
        assert tuple(first.shape) == args[0].shape if not isinstance(args[0], list) else True


def test_trace_records_the_cpp_op(ops: Any, fakes: None) -> None:
    graph = customop.trace(lambda x, y: ops.add(ops.add(x, y), y), _np(1.0), _np(2.0))
    assert str(graph).count("ops.cpptest.add.default") == 2
    np.testing.assert_allclose(graph(_np(1.0), _np(2.0)), [5.0])


def test_register_autograd_on_top_of_a_cpp_kernel(ops: Any, fakes: None) -> None:
    def backward(ctx: Any, grad: Any) -> tuple[Any, Any]:
        return grad, grad

    handle = customop.register_autograd("cpptest::add", backward)
    try:
        out, vjp_fn = customop.autograd.vjp(ops.add, _np(1.0, 2.0), _np(3.0, 4.0))
        np.testing.assert_allclose(out, [4.0, 6.0])
        gx, gy = vjp_fn(_np(1.0, 10.0))
        np.testing.assert_allclose(gx, [1.0, 10.0])
        np.testing.assert_allclose(gy, [1.0, 10.0])
    finally:
        handle.remove()


def test_on_a_dask_array_chunk_by_chunk(ops: Any, fakes: None) -> None:
    da = pytest.importorskip("dask.array")
    handle = customop.register_blockwise("cpptest::add", "i,i->i")
    try:
        x = da.from_array(np.arange(8, dtype=np.float64), chunks=4)
        result = ops.add(x, x)
        assert isinstance(result, da.Array)
        np.testing.assert_allclose(result.compute(), np.arange(8) * 2.0)
    finally:
        handle.remove()


# Importing inductor runs torch.jit.script_method, which torch 2.13 itself deprecates.
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_through_the_torch_adapter_compile_and_export(ops: Any, fakes: None) -> None:
    import customop.torch as ct

    handle = ct.register("cpptest::add")
    try:
        t = torch.arange(4.0, dtype=torch.float64)
        compiled = torch.compile(lambda x: ops.add(x, x) * 2, fullgraph=True)
        np.testing.assert_allclose(compiled(t).numpy(), np.arange(4) * 4.0)

        class Model(torch.nn.Module):
            def forward(self, x: Any) -> Any:
                return ops.add(x, x)

        exported = torch.export.export(Model(), (t,))
        assert "torch.ops.cpptest.add.default" in str(exported.graph)
        report = torch.library.opcheck(torch.ops.cpptest.add.default, (t, t))
        assert set(report.values()) == {"SUCCESS"}
    finally:
        handle.remove()

"""Running a ported op every way a port is used: eager, fake, trace and opcheck.

The ports register at import, in the process-wide dispatcher, as the
originals do (module-level ``torch.library`` code); their namespaces are
their projects' own, so they meet no other test's ops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import customop
from customop import FakeTensor, FakeTensorMode, SymInt


def _copy(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list | tuple):
        return type(value)(_copy(item) for item in value)
    return value


def _faked(mode: FakeTensorMode, value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return mode.from_real(value)
    if isinstance(value, list | tuple):
        return type(value)(_faked(mode, item) for item in value)
    return value


def assert_same_meta(fake: Any, real: Any) -> None:
    """Fake and real outputs agree in structure, shape (concrete dims), dtype and device."""
    if real is None or fake is None:
        assert fake is real
        return
    if isinstance(real, list | tuple):
        assert isinstance(fake, list | tuple)
        assert len(fake) == len(real)
        for f, r in zip(fake, real, strict=True):
            assert_same_meta(f, r)
        return
    assert isinstance(fake, FakeTensor), type(fake)
    assert len(fake.shape) == len(real.shape)
    for f, r in zip(fake.shape, real.shape, strict=True):
        if not isinstance(f, SymInt):  # a data-dependent size: any value fits
            assert f == r, (fake.shape, real.shape)
    assert fake.dtype == real.dtype, (fake.dtype, real.dtype)
    assert fake.device.type == "cpu"


def assert_same_values(got: Any, expected: Any) -> None:
    """Outputs are equal, element by element, with the same dtypes."""
    if expected is None:
        assert got is None
        return
    if isinstance(expected, list | tuple):
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            assert_same_values(g, e)
        return
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def run_every_way(
    op: Callable[..., Any], args: Sequence[Any], *, opcheck: bool = True, **kwargs: Any
) -> Any:
    """Run ``op(*args, **kwargs)`` eagerly, on fakes, traced and (unless not) under opcheck.

    Returns the eager result. Each run gets fresh copies of the inputs, so a
    mutating op is compared from the same starting point.
    """
    eager = op(*_copy(args), **kwargs)
    with FakeTensorMode() as mode:
        fake = op(*_faked(mode, _copy(args)), **kwargs)
    assert_same_meta(fake, eager)

    arrays = [i for i, value in enumerate(args) if isinstance(value, np.ndarray)]

    def traced(*tensors: Any) -> Any:
        full = list(args)
        for index, tensor in zip(arrays, tensors, strict=True):
            full[index] = tensor
        return op(*full, **kwargs)

    inputs = [args[i] for i in arrays]
    graph = customop.trace(traced, *_copy(inputs))
    assert_same_values(graph.run(*_copy(inputs)), eager)
    if opcheck:
        check(op, args, **kwargs)
    return eager


def check(op: Callable[..., Any], args: Sequence[Any], **kwargs: Any) -> None:
    """``customop.opcheck`` passes every check."""
    report = customop.opcheck(op, tuple(_copy(args)), kwargs)
    assert report
    assert set(report.values()) == {"SUCCESS"}, report

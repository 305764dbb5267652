"""``opcheck``: check an op's schema, fake impl and traceability against its real behaviour.

Modelled on ``torch.library.opcheck``. The checks copy inputs and run the op
several times, which is why they live here and in ``debug_checks`` rather than
on every call.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, Final

from customop.exceptions import OpCheckError
from customop.fake._mode import FakeTensorMode
from customop.library import DebugCheckError, debug_checks
from customop.library._aliasing import arrays_in, as_numpy
from customop.schema import FunctionSchema
from customop.tensor import FakeTensor, SymInt, device_of

__all__ = ["ALL_CHECKS", "opcheck"]

ALL_CHECKS: Final = ("test_schema", "test_faketensor", "test_trace")


def _schema_of(op: Any) -> FunctionSchema:
    schema = getattr(op, "schema", None)
    if not isinstance(schema, FunctionSchema):
        raise TypeError(
            f"opcheck: expected an op (a CustomOpDef or OpOverload), got {op!r}. opcheck "
            "compares an op's behaviour with its schema. Pass the op itself."
        )
    return schema


def _fresh(args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    # Every run gets its own copies: a mutating op must not see another run's writes.
    return copy.deepcopy(tuple(args)), copy.deepcopy(kwargs)


def _fail(op: str, check: str, problem: str) -> OpCheckError:
    return OpCheckError(f"opcheck({op}): {check} failed: {problem}")


def _test_schema(op: Any, name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    call_args, call_kwargs = _fresh(args, kwargs)
    try:
        with debug_checks():
            op(*call_args, **call_kwargs)
    except DebugCheckError as error:
        raise _fail(name, "test_schema", str(error)) from None


def _compare_meta(name: str, real: Any, fake: Any) -> None:
    reals, fakes = list(arrays_in(real)), [f for f in _flat(fake) if isinstance(f, FakeTensor)]
    if len(reals) != len(fakes):
        raise _fail(
            name, "test_faketensor",
            f"the fake impl returned {len(fakes)} tensor(s), the kernel {len(reals)}. The fake "
            "impl must return what the kernel returns, with data left out.",
        )  # fmt: skip
    for index, (r, f) in enumerate(zip(reals, fakes, strict=True)):
        shape = tuple(r.shape)
        same_shape = len(shape) == len(f.shape) and all(
            isinstance(fs, SymInt) or int(fs) == rs for fs, rs in zip(f.shape, shape, strict=True)
        )
        host = as_numpy(r)
        real_dtype = host.dtype if host is not None else r.dtype
        problems = []
        if not same_shape:
            problems.append(f"shape {tuple(f.shape)} but the kernel's is {shape}")
        if str(f.dtype) != str(FakeTensorMode().from_real(r).dtype):
            problems.append(f"dtype {f.dtype} but the kernel's is {real_dtype}")
        if str(f.device) != str(device_of(r)):
            problems.append(f"device {f.device} but the kernel's is {device_of(r)}")
        if problems:
            raise _fail(
                name, "test_faketensor",
                f"output {index} of the fake impl has " + "; ".join(problems) + ". Fix the "
                "fake impl (registered with register_fake) to compute the kernel's metadata.",
            )  # fmt: skip


def _flat(value: Any) -> list[Any]:
    if isinstance(value, tuple | list):
        return [item for part in value for item in _flat(part)]
    if isinstance(value, dict):
        return [item for part in value.values() for item in _flat(part)]
    return [value]


def _test_faketensor(op: Any, name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    real = op(*_fresh(args, kwargs)[0], **_fresh(args, kwargs)[1])
    mode = FakeTensorMode()
    fake_args = tuple(mode.from_real(a) if _is_array(a) else a for a in args)
    fake_kwargs = {k: mode.from_real(v) if _is_array(v) else v for k, v in kwargs.items()}
    try:
        with mode:
            fake = op(*fake_args, **fake_kwargs)
    except NotImplementedError as error:
        raise _fail(name, "test_faketensor", str(error).splitlines()[0]) from None
    _compare_meta(name, real, fake)


def _is_array(value: Any) -> bool:
    return (
        hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, int | float)
    )


def _same(a: Any, b: Any) -> bool:
    left, right = _flat(a), _flat(b)
    if len(left) != len(right):
        return False
    import numpy as np  # noqa: PLC0415 - opcheck only

    for x, y in zip(left, right, strict=True):
        if _is_array(x) and _is_array(y):
            if not np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True):
                return False
        elif x != y:
            return False
    return True


def _test_trace(op: Any, name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    from customop.trace._tracer import trace  # noqa: PLC0415 - trace is the layer beside fake

    dispatcher = op.dispatcher
    arrays = [i for i, a in enumerate(args) if _is_array(a)]

    def call(*tensors: Any) -> Any:
        values = list(args)
        for index, tensor in zip(arrays, tensors, strict=True):
            values[index] = tensor
        return op(*values, **kwargs)

    try:
        graph = trace(call, *[args[i] for i in arrays], dispatcher=dispatcher)
    except NotImplementedError as error:
        raise _fail(name, "test_trace", str(error).splitlines()[0]) from None
    expected = op(*_fresh(args, kwargs)[0], **_fresh(args, kwargs)[1])
    rerun = graph.run(*copy.deepcopy([args[i] for i in arrays]), dispatcher=dispatcher)
    if not _same(expected, rerun):
        raise _fail(
            name, "test_trace",
            "re-running the traced graph gave a different result from calling the op. The "
            "op must be a function of its arguments (no hidden state or randomness).",
        )  # fmt: skip


_CHECKS: Final[dict[str, Callable[[Any, str, Sequence[Any], dict[str, Any]], None]]] = {
    "test_schema": _test_schema,
    "test_faketensor": _test_faketensor,
    "test_trace": _test_trace,
}


def opcheck(
    op: Any,
    args: Sequence[Any],
    kwargs: dict[str, Any] | None = None,
    *,
    checks: Sequence[str] = ALL_CHECKS,
) -> dict[str, str]:
    """Run ``checks`` on ``op(*args, **kwargs)``: ``{"test_schema": "SUCCESS", ...}``.

    Raises `OpCheckError` naming the op, the check and what went wrong.

    Args:
        op: the operator: a `CustomOpDef`, an `OpOverload` or a handle.
        args: example positional arguments (real arrays).
        kwargs: example keyword arguments.
        checks: the checks to run: ``"test_schema"`` (declared mutation and
            aliasing), ``"test_faketensor"`` (fake vs real metadata),
            ``"test_trace"`` (the op can be traced).

    Returns:
        Each check's result, ``"SUCCESS"``.

    Raises:
        OpCheckError: a check failed.

    Examples:
        >>> import numpy as np
        >>> import customop
        >>> d = customop.Dispatcher()
        >>> _ = customop.tensor.install_backends(d)  # FakeTensor as an array type of d
        >>> @customop.custom_op("doc::double", mutates_args=(), dispatcher=d)
        ... def double(x: np.ndarray) -> np.ndarray:
        ...     return x * 2
        >>> _ = double.register_fake(lambda x: customop.empty_like(x))
        >>> customop.opcheck(double, (np.ones(3),))
        {'test_schema': 'SUCCESS', 'test_faketensor': 'SUCCESS', 'test_trace': 'SUCCESS'}
    """
    name = str(_schema_of(op).name)
    unknown = [c for c in checks if c not in _CHECKS]
    if unknown:
        raise ValueError(
            f"opcheck: unknown check {unknown[0]!r}. Each check is one of {', '.join(ALL_CHECKS)}. "
            "Pass a subset of those."
        )
    results = {}
    for check in checks:
        _CHECKS[check](op, name, args, dict(kwargs or {}))
        results[check] = "SUCCESS"
    return results

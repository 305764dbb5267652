"""``opcheck``: check an op's schema, fake impl and traceability against its real behaviour.

Modelled on ``torch.library.opcheck``. The checks copy inputs and run the op
several times, which is why they live here and in ``debug_checks`` rather than
on every call.
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple, TypeAlias

from customop.exceptions import OpCheckError
from customop.fake._aliasing import arrays_in, as_numpy
from customop.fake._debug import DebugCheckError, debug_checks
from customop.fake._mode import FakeTensorMode
from customop.schema import FunctionSchema
from customop.tensor import FakeTensor, SymInt, device_of

__all__ = ["ALL_CHECKS", "GRAD_CHECKS", "CheckOptions", "opcheck"]

ALL_CHECKS: Final = ("test_schema", "test_faketensor", "test_trace")


class CheckOptions(NamedTuple):
    """What a check may need besides the op and its arguments: tolerances.

    A named tuple: as immutable as a frozen dataclass, and a fraction of its
    class-building cost at ``import customop`` (issue #12).
    """

    atol: float | None = None
    rtol: float | None = None


#: A check: ``check(op, name, args, kwargs, options)``; raises `OpCheckError` on failure.
Check: TypeAlias = Callable[[Any, str, Sequence[Any], dict[str, Any], CheckOptions], None]

#: The gradient checks, in order: filled by the autograd layer (above this one) on import.
GRAD_CHECKS: dict[str, Check] = {}


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


def _test_schema(
    op: Any, name: str, args: Sequence[Any], kwargs: dict[str, Any], options: CheckOptions
) -> None:
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


def _test_faketensor(
    op: Any, name: str, args: Sequence[Any], kwargs: dict[str, Any], options: CheckOptions
) -> None:
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
    # Not a type (np.float16 has shape and dtype descriptors) nor a scalar (np.float32(1)).
    return (
        hasattr(value, "shape")
        and hasattr(value, "dtype")
        and not isinstance(value, type | numbers.Number)
    )


def _same(a: Any, b: Any, options: CheckOptions) -> bool:
    left, right = _flat(a), _flat(b)
    if len(left) != len(right):
        return False
    import numpy as np  # noqa: PLC0415 - opcheck only

    exact = options.atol is None and options.rtol is None
    atol = 0.0 if options.atol is None else options.atol
    rtol = 0.0 if options.rtol is None else options.rtol
    for x, y in zip(left, right, strict=True):
        if _is_array(x) and _is_array(y):
            a, b = np.asarray(x), np.asarray(y)
            if exact or a.dtype.kind not in "fc":
                same = a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
            else:
                same = a.shape == b.shape and np.allclose(
                    a, b, atol=atol, rtol=rtol, equal_nan=True
                )
            if not same:
                return False
        elif x != y:
            return False
    return True


def _test_trace(
    op: Any, name: str, args: Sequence[Any], kwargs: dict[str, Any], options: CheckOptions
) -> None:
    from customop.trace import trace  # noqa: PLC0415 -- trace (same layer) imports fake

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
    if not _same(expected, rerun, options):
        within = (
            ""
            if options.atol is None and options.rtol is None
            else f" (beyond atol={options.atol}, rtol={options.rtol})"
        )
        raise _fail(
            name, "test_trace",
            f"re-running the traced graph gave a different result from calling the op{within}. "
            "The op must be a function of its arguments (no hidden state or randomness); pass "
            "atol=/rtol= when its kernels round differently from run to run.",
        )  # fmt: skip


_CHECKS: Final[dict[str, Check]] = {
    "test_schema": _test_schema,
    "test_faketensor": _test_faketensor,
    "test_trace": _test_trace,
}


def _checks_to_run(
    checks: Sequence[str] | None, test_utils: Sequence[str] | str | None, grad: bool
) -> tuple[str, ...]:
    if checks is not None and test_utils is not None:
        raise TypeError(
            "opcheck: both checks= and test_utils= were given. They are two spellings of one "
            "option (test_utils is torch's). Pass one of them."
        )
    chosen = checks if checks is not None else test_utils
    if chosen is None:
        return ALL_CHECKS + (tuple(GRAD_CHECKS) if grad else ())
    names = (chosen,) if isinstance(chosen, str) else tuple(chosen)
    known = {**_CHECKS, **GRAD_CHECKS}
    unknown = [c for c in names if c not in known]
    if unknown:
        raise ValueError(
            f"opcheck: unknown check {unknown[0]!r}. Each check is one of "
            f"{', '.join(known)}. Pass a subset of those."
        )
    return names


def opcheck(
    op: Any,
    args: Sequence[Any],
    kwargs: dict[str, Any] | None = None,
    *,
    checks: Sequence[str] | None = None,
    test_utils: Sequence[str] | str | None = None,
    raise_exception: bool = True,
    grad: bool = False,
    atol: float | None = None,
    rtol: float | None = None,
) -> dict[str, Any]:
    """Run checks on ``op(*args, **kwargs)``: ``{"test_schema": "SUCCESS", ...}``.

    Like ``torch.library.opcheck``. The default checks are test_schema,
    test_faketensor and test_trace; ``grad=True`` (gradients matter for this
    op) adds test_autograd_registration and test_gradcheck.

    Args:
        op: The op (a CustomOpDef or OpOverload).
        args: Positional arguments of a sample call.
        kwargs: Keyword arguments of the call.
        checks: The checks to run (default: see above).
        test_utils: torch's name for ``checks`` (a name or a sequence of names).
        raise_exception: When False, a failing check's entry is its `OpCheckError`
            instead of raising it.
        grad: Also check the autograd formula and the gradients (gradcheck).
        atol: Absolute tolerance of test_trace's comparison (default: exact).
        rtol: Relative tolerance of test_trace's comparison (default: exact).

    Returns:
        One entry per check: ``"SUCCESS"``, or the error when ``raise_exception`` is False.

    Raises:
        OpCheckError: naming the op, the check and what went wrong.

    Examples:
        >>> import numpy as np
        >>> import customop
        >>> d = customop.Dispatcher()
        >>> _ = customop.tensor.install_backends(d)  # FakeTensor as an array type of d
        >>> @customop.custom_op("doccheck::double", mutates_args=(), dispatcher=d)
        ... def double(x: np.ndarray) -> np.ndarray:
        ...     return x * 2
        >>> fake = double.register_fake(lambda x: customop.empty_like(x))
        >>> customop.opcheck(double, (np.ones(3),))
        {'test_schema': 'SUCCESS', 'test_faketensor': 'SUCCESS', 'test_trace': 'SUCCESS'}

        A wrong fake impl fails test_faketensor; with ``raise_exception=False``
        the error is the check's entry instead of being raised:

        >>> customop.handle_of(fake).remove()
        >>> _ = double.register_fake(lambda x: customop.new_empty(x, (1,)))
        >>> result = customop.opcheck(double, (np.ones(3),), raise_exception=False)
        >>> print(result["test_faketensor"])
        opcheck(doccheck::double): test_faketensor failed: output 0 of the fake impl has
        shape (1,) but the kernel's is (3,). Fix the fake impl (registered with
        register_fake) to compute the kernel's metadata.
    """
    name = str(_schema_of(op).name)
    names = _checks_to_run(checks, test_utils, grad)
    options = CheckOptions(atol=atol, rtol=rtol)
    results: dict[str, Any] = {}
    for check in names:
        run = _CHECKS.get(check) or GRAD_CHECKS[check]
        try:
            run(op, name, args, dict(kwargs or {}), options)
        except OpCheckError as error:
            if raise_exception:
                raise
            results[check] = error
        else:
            results[check] = "SUCCESS"
    return results

"""``opcheck``: check an op's schema, fake impl and traceability against its real behaviour.

Modelled on ``torch.library.opcheck``. The checks copy inputs and run the op
several times, which is why they live here and in ``debug_checks`` rather than
on every call.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple, NoReturn, TypeAlias

from customop.exceptions import OpCheckError
from customop.fake._aliasing import as_numpy
from customop.fake._debug import DebugCheckError, debug_checks
from customop.fake._opcheck_meta import check_failed, fake_check, flat, is_array
from customop.schema import FunctionSchema

__all__ = ["ALL_CHECKS", "GRAD_CHECKS", "TORCH_CHECKS", "CheckOptions", "opcheck"]

ALL_CHECKS: Final = ("test_schema", "test_faketensor", "test_trace")
#: The checks (and their names) on torch tensors: torch.library.opcheck's defaults.
#: test_aot_dispatch_dynamic is customop's test_trace (torch's AOTDispatcher run is, like
#: customop's tracer, a run of the op's fake impl followed by a re-run of the recorded op).
TORCH_CHECKS: Final = (
    "test_schema",
    "test_autograd_registration",
    "test_faketensor",
    "test_aot_dispatch_dynamic",
)
#: torch's names of customop's checks.
_TORCH_NAMES: Final = {
    "test_aot_dispatch_dynamic": "test_trace",
    "test_aot_dispatch_static": "test_trace",
}


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
        raise ValueError(
            f"opcheck: op must be a customop OpOverload or CustomOpDef, got "
            f"{type(op).__qualname__} {op!r:.100}. opcheck compares an op's behaviour with its "
            "schema. Pass the op itself (customop.ops.ns.name.default); a torch OpOverload goes "
            "to torch.library.opcheck."
        )
    return schema


def _fresh(args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    # Every run gets its own copies: a mutating op must not see another run's writes.
    return copy.deepcopy(tuple(args)), copy.deepcopy(kwargs)


def _fail(op: str, check: str, problem: str) -> OpCheckError:
    return check_failed(op, check, problem)


def _test_schema(
    op: Any, name: str, args: Sequence[Any], kwargs: dict[str, Any], options: CheckOptions
) -> None:
    call_args, call_kwargs = _fresh(args, kwargs)
    try:
        with debug_checks():
            op(*call_args, **call_kwargs)
    except DebugCheckError as error:
        raise _fail(name, "test_schema", str(error)) from None


def _test_faketensor(
    op: Any, name: str, args: Sequence[Any], kwargs: dict[str, Any], options: CheckOptions
) -> None:
    fake_check(op, name, args, kwargs)


def _difference(a: Any, b: Any, options: CheckOptions) -> str | None:
    """Why ``a`` and ``b`` differ (torch's assert_close wording), or None when they agree."""
    import numpy as np  # noqa: PLC0415 - opcheck only

    left, right = flat(a), flat(b)
    if len(left) != len(right):
        return f"{len(left)} outputs against {len(right)}"
    exact = options.atol is None and options.rtol is None
    atol = 0.0 if options.atol is None else options.atol
    rtol = 0.0 if options.rtol is None else options.rtol
    for index, (x, y) in enumerate(zip(left, right, strict=True)):
        if not (is_array(x) and is_array(y)):
            if x != y:
                return f"output {index} is {x!r} against {y!r}"
            continue
        p, q = as_numpy(x), as_numpy(y)
        if p is None or q is None or p.shape != q.shape:
            return f"output {index} has shape {tuple(x.shape)} against {tuple(y.shape)}"
        close = np.array_equal(p, q, equal_nan=True)
        if not exact and p.dtype.kind in "fc":
            close = np.allclose(p, q, atol=atol, rtol=rtol, equal_nan=True)
        if not close:
            return _numbers(index, p, q, atol, rtol)
    return None


def _numbers(index: int, p: Any, q: Any, atol: float, rtol: float) -> str:
    import numpy as np  # noqa: PLC0415 - opcheck only

    gap = np.abs(p.astype(np.float64) - q.astype(np.float64))
    relative = gap / np.maximum(np.abs(q.astype(np.float64)), np.finfo(np.float64).tiny)
    if p.size == 1:
        return (
            f"output {index}: expected {q.item()} but got {p.item()}. Absolute difference: "
            f"{gap.item()} (up to {atol} allowed). Relative difference: {relative.item()} "
            f"(up to {rtol} allowed)"
        )
    bad = int(np.count_nonzero(gap > atol + rtol * np.abs(q)))
    return (
        f"output {index}: mismatched elements {bad} / {p.size}. Greatest absolute difference: "
        f"{gap.max()} (up to {atol} allowed). Greatest relative difference: {relative.max()} "
        f"(up to {rtol} allowed)"
    )


def _raise_different(name: str, check: str, difference: str, options: CheckOptions) -> NoReturn:
    within = (
        ""
        if options.atol is None and options.rtol is None
        else f" (beyond atol={options.atol}, rtol={options.rtol})"
    )
    # Chained as torch chains them: OpCheckError <- the outputs error <- the numbers.
    try:
        raise AssertionError(difference)
    except AssertionError as numbers:
        try:
            raise AssertionError(
                "Outputs of the operator are different in eager-mode PyTorch vs AOTDispatcher "
                "tracing (customop: the op called, and its traced graph re-run)"
            ) from numbers
        except AssertionError as outputs:
            raise _fail(
                name, check,
                f"re-running the traced graph gave a different result from calling the op{within}"
                f" ({difference}; eager-mode PyTorch vs AOTDispatcher). The op must be a function "
                "of its arguments (no hidden state or randomness); pass atol=/rtol= when its "
                "kernels round differently from run to run.",
            ) from outputs  # fmt: skip


def _test_trace(
    op: Any,
    name: str,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    options: CheckOptions,
    *,
    check: str = "test_trace",
) -> None:
    from customop.trace import trace  # noqa: PLC0415 -- trace (same layer) imports fake

    dispatcher = op.dispatcher
    arrays = [i for i, a in enumerate(args) if is_array(a)]

    def call(*tensors: Any) -> Any:
        values = list(args)
        for index, tensor in zip(arrays, tensors, strict=True):
            values[index] = tensor
        return op(*values, **kwargs)

    try:
        graph = trace(call, *[args[i] for i in arrays], dispatcher=dispatcher)
    except NotImplementedError as error:
        raise _fail(name, check, str(error).splitlines()[0]) from None
    expected = op(*_fresh(args, kwargs)[0], **_fresh(args, kwargs)[1])
    rerun = graph.run(*copy.deepcopy([args[i] for i in arrays]), dispatcher=dispatcher)
    difference = _difference(expected, rerun, options)
    if difference is not None:
        _raise_different(name, check, difference, options)


_CHECKS: Final[dict[str, Check]] = {
    "test_schema": _test_schema,
    "test_faketensor": _test_faketensor,
    "test_trace": _test_trace,
}


def _on_torch(args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    """Whether a sample call passes torch tensors (then torch's checks and names apply)."""
    return any(
        callable(getattr(value, "stride", None)) and hasattr(value, "requires_grad")
        for value in flat((tuple(args), kwargs))
    )


def _checks_to_run(
    checks: Sequence[str] | None,
    test_utils: Sequence[str] | str | None,
    grad: bool,
    on_torch: bool,
) -> tuple[str, ...]:
    if checks is not None and test_utils is not None:
        raise TypeError(
            "opcheck: both checks= and test_utils= were given. They are two spellings of one "
            "option (test_utils is torch's). Pass one of them."
        )
    chosen = checks if checks is not None else test_utils
    if chosen is None:
        extra = tuple(c for c in GRAD_CHECKS if grad and not (on_torch and c in TORCH_CHECKS))
        return (TORCH_CHECKS if on_torch else ALL_CHECKS) + extra
    names = (chosen,) if isinstance(chosen, str) else tuple(chosen)
    known = (*_CHECKS, *GRAD_CHECKS, *_TORCH_NAMES)
    unknown = [c for c in names if c not in known]
    if unknown:
        raise ValueError(
            f"opcheck: unknown check {unknown[0]!r} (expected test_utils to be subset of "
            f"{known}). Each check is one of {', '.join(known)}. Pass a subset of those."
        )
    return names


def _check_function(check: str) -> Check:
    if check in _TORCH_NAMES:  # torch's name of customop's trace check: failures say torch's
        return functools.partial(_test_trace, check=check)
    return _CHECKS.get(check) or GRAD_CHECKS[check]


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
    op) adds test_autograd_registration and test_gradcheck. On torch tensors
    the defaults are torch's four, under torch's names: test_schema,
    test_autograd_registration (when an input requires grad),
    test_faketensor (strides included) and test_aot_dispatch_dynamic, which is
    customop's test_trace; ``test_utils`` takes either name.

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
        OpCheckError: naming the op (``ns::name [ns.name.default]``, torch's way too),
            the check and what went wrong.
        ValueError: ``op`` is not a customop op, or a check's name is unknown.

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
        opcheck(doccheck::double [doccheck.double.default]): test_faketensor failed: output
        0 of the fake impl has shape (1,) but the kernel's is (3,) (Shapes (3,) and (1,) are
        not equal!). Fix the fake impl (registered with register_fake) to compute the
        kernel's metadata.
    """
    name = str(_schema_of(op).name)
    names = _checks_to_run(checks, test_utils, grad, _on_torch(args, kwargs or {}))
    options = CheckOptions(atol=atol, rtol=rtol)
    results: dict[str, Any] = {}
    for check in names:
        try:
            _check_function(check)(op, name, args, dict(kwargs or {}), options)
        except OpCheckError as error:
            if raise_exception:
                raise
            results[check] = error
        else:
            results[check] = "SUCCESS"
    return results

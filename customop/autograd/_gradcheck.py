"""``gradcheck``: analytic gradients against central finite differences, in float64.

As torch's ``gradcheck(fast_mode=True)``: one vjp with a random cotangent
``u`` gives ``u @ J``; for each input element, ``(u . f(x + eps) - u . f(x -
eps)) / 2 eps`` gives the same number numerically. A wrong formula changes
``u @ J`` for almost every ``u``, and the check costs one backward and two
forwards per input element, not one backward per output element.

Inputs are float64 numpy copies of the float array arguments (host copies of
other backends' arrays), so the finite differences are accurate and no
argument is changed.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from customop.autograd._tape import differentiable
from customop.autograd._transforms import vjp
from customop.dispatch import Dispatcher
from customop.exceptions import GradcheckError
from customop.fake import as_numpy

if TYPE_CHECKING:
    import numpy as np

__all__ = ["gradcheck"]


def _names(fn: Callable[..., Any], count: int) -> list[str]:
    # An op names its inputs by its schema (also through functools.partial(op, **kwargs)).
    schema = getattr(fn, "schema", None) or getattr(getattr(fn, "func", None), "schema", None)
    if schema is not None:
        names = [arg.name for arg in schema.arguments]
    else:
        try:
            names = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            names = []
    return [names[i] if i < len(names) else f"input {i}" for i in range(count)]


def _float64(value: Any) -> np.ndarray[Any, Any]:
    import numpy as np  # noqa: PLC0415 -- keeps `import customop` free of numpy

    if hasattr(value, "detach"):  # a torch tensor that may require grad
        value = value.detach()
    host = as_numpy(value)
    if host is None and callable(getattr(value, "get", None)):
        host = as_numpy(value.get())  # cupy: an explicit copy to the host
    if host is None:
        raise TypeError(
            f"gradcheck: argument {type(value).__name__} has no host data to copy. Finite "
            "differences need the values. Pass arrays numpy can read (not fakes)."
        )
    return np.array(host, dtype=np.float64)


def _flat(value: Any) -> list[Any]:
    if isinstance(value, tuple | list):
        return [item for part in value for item in _flat(part)]
    return [value]


def gradcheck(
    fn_or_op: Callable[..., Any],
    args: Sequence[Any],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    dispatcher: Dispatcher | None = None,
) -> bool:
    """Check ``fn_or_op``'s gradients at ``args`` against central finite differences.

    Args:
        fn_or_op: An op, or a function of ops; its outputs may be a tuple.
        args: The arguments; every float array among them is differentiated.
        eps: The finite-difference step.
        atol: Absolute tolerance.
        rtol: Relative tolerance (of the numeric value).
        dispatcher: The ops' dispatcher (default: the op's own, else ``customop.dispatcher``).

    Returns:
        True when every gradient matches.

    Raises:
        GradcheckError: naming the input whose gradient is wrong, the element,
            and the largest error; or the op, input and element where either
            gradient is NaN or infinite.
        ValueError: when no argument is a float array.
    """
    import numpy as np  # noqa: PLC0415 -- keeps `import customop` free of numpy

    target = dispatcher if dispatcher is not None else getattr(fn_or_op, "dispatcher", None)
    positions = [i for i, value in enumerate(args) if differentiable(value)]
    values = [_float64(a) if i in positions else a for i, a in enumerate(args)]
    if not positions:
        raise ValueError(
            "gradcheck: no argument is a float array. Gradients are checked for float "
            "inputs. Pass at least one float array."
        )

    def call(*primals: Any) -> Any:
        merged = list(values)
        for position, primal in zip(positions, primals, strict=True):
            merged[position] = primal
        return fn_or_op(*merged)

    primals = [values[i] for i in positions]
    out, vjp_fn = vjp(call, *primals, dispatcher=target)
    rng = np.random.default_rng(0)
    outs = _flat(out)
    cotangents = [
        np.asarray(rng.standard_normal(np.shape(o)), dtype=np.asarray(o).dtype)
        if differentiable(o)
        else None
        for o in outs
    ]
    analytic = vjp_fn(cotangents if isinstance(out, tuple | list) else cotangents[0])
    names = _names(fn_or_op, len(values))
    label = _label(fn_or_op)
    for index, value in enumerate(outs):
        if differentiable(value):
            _check_finite(np.asarray(value, dtype=np.float64), "output", f"{index} of {label}")
    for which, (position, grad) in enumerate(zip(positions, analytic, strict=True)):
        found = np.asarray(grad, dtype=np.float64)
        _check_finite(found, "analytic", f"{names[position]!r} of {label}")
        numeric = _numeric(call, primals, which, cotangents, eps)
        _check_finite(numeric, "numeric", f"{names[position]!r} of {label}")
        _compare(names[position], found, numeric, atol, rtol)
    return True


def _label(fn: Callable[..., Any]) -> str:
    """How messages name what is checked: an op by its name, else a function by its own."""
    schema = getattr(fn, "schema", None) or getattr(getattr(fn, "func", None), "schema", None)
    if schema is not None:
        return repr(str(schema.name))
    return f"function {getattr(fn, '__qualname__', type(fn).__name__)!r}"


def _check_finite(grad: np.ndarray[Any, Any], side: str, where: str) -> None:
    """NaN compares unequal to everything: a gradient that is not finite fails, named."""
    import numpy as np  # noqa: PLC0415 -- keeps `import customop` free of numpy

    bad = ~np.isfinite(grad)
    if not bad.any():
        return
    index = np.unravel_index(int(np.argmax(bad)), grad.shape)
    element = tuple(int(i) for i in index)
    value = grad[index]
    what, there, fix = _NOT_FINITE[side]
    raise GradcheckError(
        f"gradcheck: {what} {where} is {value} at index {element}{there}. A gradient that is "
        "not finite cannot be compared (NaN is unequal to everything), so the check would "
        f"prove nothing. {fix}"
    )


_AT_A_POINT = "Check at a point where the op is finite and differentiable."
#: Per side: what is not finite, where that comes from, and the fix.
_NOT_FINITE: dict[str, tuple[str, str, str]] = {
    "analytic": (
        "the analytic gradient of input",
        "",
        "Fix the backward formula (register_autograd), or check at a point where the op is "
        "differentiable.",
    ),
    "numeric": (
        "the numeric gradient of input",
        ": the forward is not finite within eps of the point",
        _AT_A_POINT,
    ),
    "output": ("output", ": the forward is not finite at the point", _AT_A_POINT),
}


def _projection(out: Any, cotangents: list[Any]) -> float:
    import numpy as np  # noqa: PLC0415 -- keeps `import customop` free of numpy

    total = 0.0
    for value, ct in zip(_flat(out), cotangents, strict=True):
        if ct is not None:
            total += float(np.sum(np.asarray(value, dtype=np.float64) * ct))
    return total


def _numeric(
    call: Callable[..., Any], primals: list[Any], which: int, cotangents: list[Any], eps: float
) -> np.ndarray[Any, Any]:
    import numpy as np  # noqa: PLC0415 -- keeps `import customop` free of numpy

    base = primals[which]
    grad = np.zeros(base.shape, dtype=np.float64)
    flat = grad.reshape(-1)
    for index in range(base.size):
        shifted = []
        for sign in (1.0, -1.0):
            moved = base.copy()
            moved.reshape(-1)[index] += sign * eps
            args = [moved if i == which else p for i, p in enumerate(primals)]
            shifted.append(_projection(call(*args), cotangents))
        flat[index] = (shifted[0] - shifted[1]) / (2 * eps)
    return grad


def _compare(
    name: str,
    analytic: np.ndarray[Any, Any],
    numeric: np.ndarray[Any, Any],
    atol: float,
    rtol: float,
) -> None:
    import numpy as np  # noqa: PLC0415 -- keeps `import customop` free of numpy

    error = np.abs(analytic - numeric)
    bad = error > atol + rtol * np.abs(numeric)
    if not bad.any():
        return
    worst = np.unravel_index(int(np.argmax(np.where(bad, error, -1.0))), error.shape)
    raise GradcheckError(
        f"gradcheck: the gradient of input {name!r} does not match finite differences: at "
        f"index {tuple(int(i) for i in worst)} the formula gives {analytic[worst]:.6g}, the "
        f"numeric value is {numeric[worst]:.6g} (largest error {float(error.max()):.3g}; "
        f"{int(bad.sum())} of {bad.size} elements off; atol={atol}, rtol={rtol}). The "
        "backward formula (register_autograd) disagrees with the forward. Fix the formula "
        "for this input."
    )

"""Lowering: the primitive as XLA code, from the op's ``"jax"`` kernel or its numpy one.

``mlir.lower_fun`` traces a Python function of the operands and lowers it in
place of the primitive:

* a ``"jax"`` kernel is that function (after rebuilding the call), so its
  ``jax.numpy`` code lands inline in the caller's HLO, where XLA fuses it;
* a CPU kernel runs through ``jax.pure_callback``: XLA calls back into Python
  on the host with numpy arrays, and copies results back to the device;
* an op with neither raises `MissingKernelError` naming the fixes.

Each kernel's results are checked against the avals the fake impl promised:
XLA would otherwise fail with a type error about buffers, far from the cause.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import jax
import jax.numpy as jnp
import numpy as np

from customop.exceptions import MissingKernelError
from customop.jax._abstract import abstract, api_of
from customop.jax._api import aval_of, canonical, lower_fun
from customop.jax._layout import Statics, flatten_outputs, refuse, unflatten
from customop.jax._plan import CPU_KEYS, JAX_KEYS, Plan

__all__ = ["lowering", "run_uncompiled"]


def _check(plan: Plan, what: str, outs: Sequence[Any], avals: Sequence[Any]) -> None:
    for index, (out, aval) in enumerate(zip(outs, avals, strict=True)):
        shape, element = tuple(getattr(out, "shape", ())), getattr(out, "dtype", None)
        if shape != tuple(aval.shape) or element != aval.dtype:
            refuse(
                ValueError,
                api_of(plan),
                f"its {what} returned {element}{list(shape)} as output {index}, but the fake "
                f"impl says {aval.dtype}{list(aval.shape)}",
                "JAX compiled the call around the fake impl's shapes and dtypes",
                "Make the kernel and the fake impl agree (customop.opcheck finds where)",
            )


def _jax_kernel(plan: Plan, statics: Statics, avals_in: Any, avals_out: Any) -> Callable[..., Any]:
    handle = plan.handle
    _, layout = abstract(plan, statics, avals_in)

    def run(*operands: Any) -> list[Any]:
        args, kwargs = unflatten(handle.schema, statics, operands)
        outs = flatten_outputs(layout, handle.redispatch(JAX_KEYS, *args, **kwargs))
        _check(plan, "'jax' kernel", outs, avals_out)
        return outs

    return run


def _host_result(plan: Plan, outs: Sequence[Any], avals: Sequence[Any]) -> tuple[Any, ...]:
    """numpy results as the avals want them: x64-off JAX holds float64 as float32."""
    fixed = []
    for out, aval in zip(outs, avals, strict=True):
        array = np.asarray(out)
        if array.dtype != aval.dtype and canonical(array.dtype) == aval.dtype:
            array = array.astype(aval.dtype)
        fixed.append(array)
    _check(plan, "CPU kernel", fixed, avals)
    return tuple(fixed)


def _host(plan: Plan, statics: Statics, avals_in: Any, avals_out: Any) -> Callable[..., Any]:
    """The CPU kernel as a function of host arrays: numpy arrays in, numpy arrays out."""
    handle = plan.handle
    _, layout = abstract(plan, statics, avals_in)

    def host(*arrays: Any) -> tuple[Any, ...]:
        args, kwargs = unflatten(handle.schema, statics, [np.asarray(a) for a in arrays])
        outs = flatten_outputs(layout, handle.redispatch(CPU_KEYS, *args, **kwargs))
        return _host_result(plan, outs, avals_out)

    return host


def _callback(plan: Plan, statics: Statics, avals_in: Any, avals_out: Any) -> Callable[..., Any]:
    host = _host(plan, statics, avals_in, avals_out)
    results = [jax.ShapeDtypeStruct(aval.shape, aval.dtype) for aval in avals_out]

    def run(*operands: Any) -> list[Any]:
        # Never batched itself: vmap reaches the customop primitive first.
        return list(jax.pure_callback(host, results, *operands, vmap_method="sequential"))

    return run


def _missing(plan: Plan) -> NoReturn:
    short = plan.name.split("::", 1)[-1]
    raise MissingKernelError(
        f"{api_of(plan)}: the op has no kernel JAX can run: no 'jax' kernel and no CPU "
        "kernel. customop lowers a call to a kernel written with jax.numpy (inline), else to "
        "the numpy CPU kernel through jax.pure_callback (on the host). Register one with "
        f"@{short}.register_kernel('jax') (jax.numpy code) or "
        f"@{short}.register_kernel('cpu') (numpy code).",
        op=plan.name,
        key="jax",
    )


def lowering(ctx: Any, *values: Any, op: Plan, args: Statics) -> Any:
    """The primitive's MLIR lowering rule (``mlir.register_lowering``)."""
    if op.kind == "jax":
        fn = _jax_kernel(op, args, ctx.avals_in, ctx.avals_out)
    elif op.kind == "callback":
        fn = _callback(op, args, ctx.avals_in, ctx.avals_out)
    else:
        _missing(op)
    return lower_fun(fn, multiple_results=True)(ctx, *values)


def run_uncompiled(plan: Plan, statics: Statics, operands: Sequence[Any]) -> list[Any]:
    """The primitive on arrays without compiling it (under ``jax.disable_jit()``)."""
    avals_in = [aval_of(x) for x in operands]
    avals_out, _ = abstract(plan, statics, avals_in)
    if plan.kind == "jax":
        return list(_jax_kernel(plan, statics, avals_in, avals_out)(*operands))
    if plan.kind == "callback":
        host = _host(plan, statics, avals_in, avals_out)
        return [jnp.asarray(out) for out in host(*operands)]
    _missing(plan)

"""Abstract evaluation: output shapes and dtypes from the op's fake impl, not a kernel.

JAX asks a primitive for its outputs' avals while it traces. customop
answers with the op's fake impl, run on `FakeTensor`s made from the input
avals (device ``"jax"``) inside a `FakeTensorMode`, so nothing runs on data.
A data-dependent size (``get_ctx().new_dynamic_size()``) is refused here: JAX
needs every result shape at trace time. Results are cached per plan, by the
call's static parameters and input avals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import jax.numpy as jnp

from customop.dispatch import DispatchKey, DispatchKeySet
from customop.exceptions import MissingKernelError
from customop.fake import FakeTensorMode
from customop.jax._api import ShapedArray, canonical
from customop.jax._layout import OutLayout, Statics, flatten_outputs, out_layout, unflatten
from customop.jax._plan import Plan
from customop.tensor import DataDependentError, Device, FakeTensor, dtype, to_dtype

__all__ = ["DEVICE", "abstract", "api_of", "to_aval", "to_fake"]

#: The device of JAX arrays (and of the fakes made for them).
DEVICE: Final = Device("jax")
_FAKE: Final = DispatchKeySet(DispatchKey.Fake)
#: Entries kept per plan before the cache starts over (shapes seen by one op).
_MAX_SHAPES: Final = 1024


def api_of(plan: Plan) -> str:
    """How messages name a call: ``ns::op on JAX arrays``."""
    return f"{plan.name} on JAX arrays"


def to_fake(aval: Any) -> FakeTensor:
    """A fake with ``aval``'s shape and dtype, on the ``"jax"`` device."""
    return FakeTensor(tuple(aval.shape), to_dtype(aval.dtype.name), DEVICE)


def _jax_dtype(element: dtype) -> Any:
    return canonical(jnp.dtype(element.name))


def to_aval(plan: Plan, index: int, fake: Any) -> Any:
    """A fake impl's output ``fake`` as a JAX aval; refuses data-dependent sizes."""
    shape = tuple(fake.shape)
    if not all(isinstance(size, int) for size in shape):
        raise DataDependentError(
            f"{api_of(plan)}: output {index} of the fake impl has the data-dependent shape "
            f"{shape}. JAX needs every result shape while it traces, and a size from "
            "get_ctx().new_dynamic_size() is only known once the kernel ran. Give the op a "
            "static result shape (pad to a maximum size, and return the count as a second "
            "output), or call it on numpy arrays outside JAX."
        )
    return ShapedArray(shape, _jax_dtype(to_dtype(fake.dtype)))


def _run_fake(plan: Plan, statics: Statics, avals: Sequence[Any]) -> Any:
    handle = plan.handle
    args, kwargs = unflatten(handle.schema, statics, [to_fake(aval) for aval in avals])
    with FakeTensorMode():
        try:
            return handle.redispatch(_FAKE, *args, **kwargs)
        except MissingKernelError as error:
            if error.key != "Fake":
                raise
            short = plan.name.split("::", 1)[-1]
            raise MissingKernelError(
                f"{api_of(plan)}: the op has no fake impl. JAX asks for output shapes and "
                "dtypes while it traces, and customop answers with the fake impl, never a "
                f"kernel. Register one with @{short}.register_fake (customop.register_fake("
                f"{plan.name!r}, fn) for Library ops).",
                op=plan.name,
                key="Fake",
            ) from error


def abstract(plan: Plan, statics: Statics, avals: Sequence[Any]) -> tuple[list[Any], OutLayout]:
    """The output avals of a call and how they group into the op's returns."""
    key = (statics, *avals)
    found = plan.shapes.get(key)
    if found is not None:
        return found
    result = _run_fake(plan, statics, avals)
    layout = out_layout(plan.handle, result, api_of(plan))
    outs = [to_aval(plan, i, fake) for i, fake in enumerate(flatten_outputs(layout, result))]
    if len(plan.shapes) >= _MAX_SHAPES:
        plan.shapes.clear()
    plan.shapes[key] = (outs, layout)
    return outs, layout

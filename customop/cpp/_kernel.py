"""The Python kernel that calls one compiled kernel: DLPack in, the caller's arrays out.

Arguments go to TVM-FFI's C ABI as they come: tensors (numpy, torch, anything
with ``__dlpack__``) as DLPack tensors, zero-copy; numbers, strings and lists
as themselves. Only ``ScalarType`` and ``Device`` values are translated. A new
tensor the kernel returns comes back as an array of the first tensor
argument's type (torch's arrives as a torch tensor already; numpy's is wrapped
with ``numpy.from_dlpack``, zero-copy). TVM-FFI releases the GIL while the
kernel runs unless the impl asked to keep it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, Final

from customop.exceptions import KernelError
from customop.schema import FunctionSchema
from customop.tensor import Device, dtype

__all__ = ["python_kernel"]

_MARKER: Final = "customop-kernel-error: "
_TENSOR_TYPES: Final = frozenset({"Tensor", "Tensor?", "Tensor[]"})


def python_kernel(
    function: Any, *, op: str, source: str, inferred: FunctionSchema, kwonly: Sequence[str]
) -> Callable[..., Any]:
    """A kernel for the dispatcher that calls the TVM-FFI ``function`` of one C++ kernel.

    ``inferred`` is the schema of the C++ type (what the function takes and gives);
    ``kwonly`` the names the dispatcher passes as keywords (the op's kwarg-only ones).
    """
    import tvm_ffi  # noqa: PLC0415 -- the foundation loads with the first library

    types = [str(argument.type) for argument in inferred.arguments]
    found = ((i, _converter(text, tvm_ffi)) for i, text in enumerate(types))
    convert = tuple((i, fn) for i, fn in found if fn is not None)
    first_tensor = next((i for i, text in enumerate(types) if text in _TENSOR_TYPES), None)
    wrap = _result_wrapper(len(inferred.returns), tvm_ffi.Tensor)
    names = tuple(kwonly)
    if not convert and not names and first_tensor == 0 and len(inferred.returns) == 1:
        kernel = _fast_kernel(function, op, source, tvm_ffi.Tensor)
    else:
        kernel = _general_kernel(
            function, op, source, convert=convert, names=names, first=first_tensor, wrap=wrap
        )
    kernel.__qualname__ = kernel.__name__ = f"cpp_kernel[{op}]"
    return kernel


def _general_kernel(
    function: Any,
    op: str,
    source: str,
    *,
    convert: tuple[tuple[int, Callable[[Any], Any]], ...],
    names: tuple[str, ...],
    first: int | None,
    wrap: Callable[[Any, type | None], Any],
) -> Callable[..., Any]:
    """Any shape: keywords appended in schema order, dtypes and devices converted."""

    def kernel(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = (*args, *(kwargs[name] for name in names))
        if convert:
            values = list(args)
            for i, fn in convert:
                values[i] = fn(values[i])
            args = tuple(values)
        try:
            result = function(*args)
        except Exception as error:  # the kernel's C++ exception, or FFI argument conversion
            raise _failure(op, source, error) from None
        like = None if first is None else type(args[first])
        return wrap(result, like)

    return kernel


def _fast_kernel(function: Any, op: str, source: str, tvm_tensor: type) -> Callable[..., Any]:
    """The common shape: tensors first, nothing to convert, one tensor returned."""
    import numpy  # noqa: PLC0415 -- a kernel call has arrays already

    ndarray = numpy.ndarray
    from_numpy: Callable[[Any], Any] = numpy.from_dlpack

    def kernel(*args: Any) -> Any:
        try:
            result = function(*args)
        except Exception as error:  # the kernel's C++ exception, or FFI argument conversion
            raise _failure(op, source, error) from None
        if type(result) is not tvm_tensor:  # torch's arrive as torch tensors
            return result
        like = type(args[0])
        return from_numpy(result) if like is ndarray else _from_dlpack(like)(result)

    return kernel


def _converter(text: str, tvm_ffi: Any) -> Callable[[Any], Any] | None:
    base = text.removesuffix("?")
    if base == "ScalarType":
        fn: Callable[[Any], Any] = lambda value: tvm_ffi.dtype(_dtype_name(value))  # noqa: E731
    elif base == "Device":
        fn = lambda value: _device(value, tvm_ffi)  # noqa: E731
    else:
        return None
    if text.endswith("?"):
        return lambda value: None if value is None else fn(value)
    return fn


def _dtype_name(value: Any) -> str:
    """The name ("float32") of a dtype in any spelling customop accepts."""
    return dtype.from_any(value).name


def _device(value: Any, tvm_ffi: Any) -> Any:
    device = value if isinstance(value, Device) else Device(str(value))
    return tvm_ffi.device(device.type, device.index or 0)


def _result_wrapper(count: int, tvm_tensor: type) -> Callable[[Any, type | None], Any]:
    def one(value: Any, like: type | None) -> Any:
        if type(value) is tvm_tensor:
            return _from_dlpack(like)(value)
        return value

    if count == 1:
        return one
    if count == 0:
        return lambda value, like: None
    return lambda value, like: tuple(one(item, like) for item in value)


_FROM_DLPACK: dict[type | None, Callable[[Any], Any]] = {}


def _from_dlpack(like: type | None) -> Callable[[Any], Any]:
    """``from_dlpack`` of the module that defines ``like`` (numpy's when it has none)."""
    found = _FROM_DLPACK.get(like)
    if found is None:
        root = sys.modules.get(like.__module__.split(".")[0]) if like is not None else None
        found = getattr(root, "from_dlpack", None)
        if found is None:
            import numpy  # noqa: PLC0415 -- only for results of array types without one

            found = numpy.from_dlpack
        _FROM_DLPACK[like] = found
    return found


def _failure(op: str, source: str, error: Exception) -> KernelError:
    text = str(error).strip()
    if _MARKER in text:
        message = text.split(_MARKER, 1)[1].rstrip(".")
        return KernelError(
            f"{op}: the C++ kernel at {source} failed: {message}. The error comes from the "
            f"kernel itself (a CUSTOMOP_CHECK or a C++ exception). Fix the inputs, or the "
            f"kernel at {source}.",
            op=op,
            source=source,
        )
    first = text.splitlines()[0] if text else type(error).__name__
    return KernelError(
        f"{op}: the arguments could not be passed to the C++ kernel at {source}: "
        f"{first.rstrip('.')}. Tensors reach a compiled kernel through DLPack. Pass arrays "
        "that support DLPack (numpy, torch), with the schema's types.",
        op=op,
        source=source,
    )

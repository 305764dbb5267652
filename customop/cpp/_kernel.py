"""The Python kernel that calls one compiled kernel: DLPack in, the caller's arrays out.

Arguments go to TVM-FFI's C ABI as they come: tensors (numpy, torch, anything
with ``__dlpack__``) as DLPack tensors, zero-copy; numbers, strings and lists
as themselves. Only ``ScalarType`` and ``Device`` values are translated. A new
tensor the kernel returns comes back as an array of the first tensor
argument's type (torch's arrives as a torch tensor already; numpy's is wrapped
with ``numpy.from_dlpack``, zero-copy). TVM-FFI releases the GIL while the
kernel runs unless the impl asked to keep it.

The C++ side knows its arguments by position only; its messages carry a token
(``argument {customop-arg:1}``) that `kernel_failure` replaces with the
schema's name of the argument (``argument 'b'``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final

from customop.exceptions import KernelError
from customop.schema import FunctionSchema
from customop.tensor import Device, dtype

__all__ = ["argument_converters", "kernel_failure", "python_kernel"]

_MARKER: Final = "customop-kernel-error: "
_ARG_TOKEN: Final = re.compile(r"\{customop-arg:(\d+)\}")
#: TVM-FFI's own messages name arguments by position ("argument #0").
_FFI_ARG: Final = re.compile(r"argument #(\d+)")
_TENSOR_TYPES: Final = frozenset({"Tensor", "Tensor?", "Tensor[]"})


def python_kernel(
    function: Any,
    *,
    op: str,
    source: str,
    inferred: FunctionSchema,
    kwonly: Sequence[str],
    names: Sequence[str] = (),
) -> Callable[..., Any]:
    """A kernel for the dispatcher that calls the TVM-FFI ``function`` of one C++ kernel.

    ``inferred`` is the schema of the C++ type (what the function takes and gives);
    ``kwonly`` the names the dispatcher passes as keywords (the op's kwarg-only ones);
    ``names`` what errors call the C++ parameters (the schema's argument names).
    """
    import tvm_ffi  # noqa: PLC0415 -- the foundation loads with the first library

    types = [str(argument.type) for argument in inferred.arguments]
    convert = argument_converters(inferred)
    first_tensor = next((i for i, text in enumerate(types) if text in _TENSOR_TYPES), None)
    wrap = _result_wrapper(len(inferred.returns), tvm_ffi.Tensor)
    fail = _failure_of(op, source, names or [a.name for a in inferred.arguments])
    keywords = tuple(kwonly)
    if not convert and not keywords and first_tensor == 0 and len(inferred.returns) == 1:
        kernel = _fast_kernel(function, fail, tvm_ffi.Tensor, len(types))
    else:
        kernel = _general_kernel(
            function, fail, convert=convert, names=keywords, first=first_tensor, wrap=wrap
        )
    kernel.__qualname__ = kernel.__name__ = f"cpp_kernel[{op}]"
    return kernel


Converters = tuple[tuple[int, Callable[[Any], Any]], ...]


def argument_converters(inferred: FunctionSchema) -> Converters:
    """``(position, convert)`` of the arguments TVM-FFI cannot take as they come."""
    import tvm_ffi  # noqa: PLC0415 -- the foundation loads with the first library

    found = ((i, _converter(str(a.type), tvm_ffi)) for i, a in enumerate(inferred.arguments))
    return tuple((i, fn) for i, fn in found if fn is not None)


def _failure_of(op: str, source: str, names: Sequence[str]) -> Callable[[Exception], KernelError]:
    held = tuple(names)
    return lambda error: kernel_failure(op, source, error, held)


def _general_kernel(
    function: Any,
    fail: Callable[[Exception], KernelError],
    *,
    convert: Converters,
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
            raise fail(error) from None
        like = None if first is None else type(args[first])
        return wrap(result, like)

    return kernel


def _fast_kernel(
    function: Any, fail: Callable[[Exception], KernelError], tvm_tensor: type, arity: int
) -> Callable[..., Any]:
    """The common shape: tensors first, nothing to convert, one tensor returned."""
    import numpy  # noqa: PLC0415 -- a kernel call has arrays already

    ndarray = numpy.ndarray
    from_numpy: Callable[[Any], Any] = numpy.from_dlpack
    if arity == 2:  # the most common shape, without packing a tuple (~25 ns a call)

        def kernel2(a: Any, b: Any) -> Any:
            try:
                result = function(a, b)
            except Exception as error:  # the kernel's C++ exception, or FFI argument conversion
                raise fail(error) from None
            if type(result) is not tvm_tensor:  # torch's arrive as torch tensors
                return result
            like = type(a)
            return from_numpy(result) if like is ndarray else _from_dlpack(like)(result)

        return kernel2

    def kernel(*args: Any) -> Any:
        try:
            result = function(*args)
        except Exception as error:  # the kernel's C++ exception, or FFI argument conversion
            raise fail(error) from None
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


def _named(text: str, pattern: re.Pattern[str], names: Sequence[str]) -> str:
    def name(found: re.Match[str]) -> str:
        i = int(found.group(1))
        return repr(names[i]) if i < len(names) else f"#{i}"

    return pattern.sub(name, text)


def kernel_failure(op: str, source: str, error: Exception, names: Sequence[str]) -> KernelError:
    """The `KernelError` of a failed call: the kernel's own error, or TVM-FFI's (arguments
    named by ``names``, the C++ parameters' names in the schema)."""
    text = str(error).strip()
    if _MARKER in text:
        message = _named(text.split(_MARKER, 1)[1].rstrip("."), _ARG_TOKEN, names)
        return KernelError(
            f"{op}: the C++ kernel at {source} failed: {message}. The error comes from the "
            f"kernel itself (a CUSTOMOP_CHECK or a C++ exception). Fix the inputs, or the "
            f"kernel at {source}.",
            op=op,
            source=source,
        )
    first = _named(text.splitlines()[0], _FFI_ARG, names) if text else type(error).__name__
    return KernelError(
        f"{op}: the arguments could not be passed to the C++ kernel at {source}: "
        f"{first.rstrip('.')}. Tensors reach a compiled kernel through DLPack. Pass arrays "
        "that support DLPack (numpy, torch), with the schema's types.",
        op=op,
        source=source,
    )

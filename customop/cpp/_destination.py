"""Destination passing: customop allocates a kernel's outputs from the op's fake impl.

A C++ kernel for an op that returns tensors may take them as trailing
``TensorView`` parameters and return void (``m.impl("add", &add_into)``, with
or without ``.out_from_fake()``). Each call then runs the op's fake impl on
fakes of the arguments (inside a `FakeTensorMode`, so it sees metadata only),
allocates one array per returned fake with the fake's shape, dtype and device
and the first tensor argument's array type (``new_empty``: numpy in, numpy
out; torch in, torch out), passes them to the kernel after the arguments, and
returns them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from customop.cpp._kernel import argument_converters, kernel_failure
from customop.dispatch import Dispatcher, OperatorHandle
from customop.exceptions import KernelError, MissingKernelError
from customop.fake import FakeTensorMode
from customop.schema import FunctionSchema
from customop.tensor import FakeTensor, new_empty

__all__ = ["destination_kernel"]


def destination_kernel(
    function: Any,
    *,
    op: str,
    source: str,
    inferred: FunctionSchema,
    kwonly: Sequence[str],
    names: Sequence[str],
    outputs: int,
    dispatcher: Dispatcher,
) -> Callable[..., Any]:
    """A kernel for the dispatcher that allocates ``outputs`` arrays from the fake impl of
    ``op`` and passes them to the TVM-FFI ``function`` after the arguments.

    ``inferred`` is the C++ type's schema (the op's arguments, then the outputs);
    ``names`` what errors call the C++ parameters.
    """
    call = _Call(
        op, source, dispatcher=dispatcher, inferred=inferred, kwonly=tuple(kwonly),
        names=tuple(names), outputs=outputs,
    )  # fmt: skip

    def kernel(*args: Any, **kwargs: Any) -> Any:
        allocated = call.allocate(args, kwargs)
        values = call.values(args, kwargs)
        try:
            function(*values, *allocated)
        except Exception as error:  # the kernel's C++ exception, or FFI argument conversion
            raise kernel_failure(op, source, error, call.names) from None
        return allocated[0] if outputs == 1 else tuple(allocated)

    kernel.__qualname__ = kernel.__name__ = f"cpp_kernel[{op}]"
    return kernel


class _Call:
    """What every call of one destination-passing kernel needs, computed once."""

    def __init__(
        self,
        op: str,
        source: str,
        *,
        dispatcher: Dispatcher,
        inferred: FunctionSchema,
        kwonly: tuple[str, ...],
        names: tuple[str, ...],
        outputs: int,
    ) -> None:
        self.op, self.source, self.dispatcher = op, source, dispatcher
        self.kwonly, self.names, self.outputs = kwonly, names, outputs
        arguments = len(inferred.arguments) - outputs
        self.convert = tuple((i, fn) for i, fn in argument_converters(inferred) if i < arguments)
        npos = arguments - len(kwonly)
        #: (position, keyword or "", kind) of each tensor argument of the op.
        self.tensors = tuple(
            (i, kwonly[i - npos] if i >= npos else "", kind)
            for i, kind in inferred.tensor_argument_positions
            if i < arguments
        )
        self.handle: OperatorHandle | None = None

    def values(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        """The arguments as the C++ function takes them: keywords in order, converted."""
        values = [*args, *(kwargs[name] for name in self.kwonly)] if kwargs else list(args)
        for i, fn in self.convert:
            values[i] = fn(values[i])
        return values

    def allocate(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        """The outputs: arrays shaped as the fake impl's results, of the caller's type."""
        mode = FakeTensorMode()  # per call: a mode object is entered by one thread at once
        fake_args, fake_kwargs = list(args), dict(kwargs)
        like = None
        for index, keyword, kind in self.tensors:
            value = kwargs.get(keyword) if keyword else args[index]
            if value is None:
                continue
            fake: Any
            if kind in ("tensor", "optional"):
                fake = mode.from_real(value)
                like = value if like is None else like
            else:
                fake = [None if v is None else mode.from_real(v) for v in value]
                like = next((v for v in value if v is not None), None) if like is None else like
            if keyword:
                fake_kwargs[keyword] = fake
            else:
                fake_args[index] = fake
        with mode:
            results = self._fake(fake_args, fake_kwargs)
        fakes = results if isinstance(results, tuple) else (results,)
        if len(fakes) != self.outputs or not all(type(f) is FakeTensor for f in fakes):
            self._raise(
                f"its fake impl returned {_describe(results)}, not {self.outputs} FakeTensor(s)",
                "Return one customop.empty_like(...) / customop.empty(...) per output",
            )
        return [self._array(fake, like) for fake in fakes]

    def _fake(self, args: list[Any], kwargs: dict[str, Any]) -> Any:
        handle = self.handle
        if handle is None:
            handle = self.handle = self.dispatcher.find_op(self.op)
        if handle is None:  # pragma: no cover - a registered kernel has its op
            self._raise("its op is not defined", "Define the op before calling it")
        try:
            return handle(*args, **kwargs)
        except MissingKernelError:
            self._raise(
                "the op has no fake impl",
                f"Register one: @customop.register_fake({self.op!r}), returning "
                "customop.empty_like(...) per output",
            )

    def _array(self, fake: FakeTensor, like: Any) -> Any:
        shape = tuple(fake.shape)
        if not all(type(size) is int for size in shape):
            self._raise(
                f"its fake impl returned a data-dependent shape {shape}",
                "Let the kernel allocate its outputs (return customop::Tensor from "
                "customop::empty) when sizes depend on the data",
            )
        if like is None:
            self._raise("the op has no tensor argument", "Let the kernel allocate its outputs")
        return new_empty(like, shape, dtype=fake.dtype, device=fake.device)

    def _raise(self, what: str, fix: str) -> NoReturn:
        raise KernelError(
            f"{self.op}: the C++ kernel at {self.source} writes into outputs customop "
            f"allocates from the op's fake impl (destination passing), but {what}. The "
            f"outputs' shapes and dtypes come from the fake impl. {fix}.",
            op=self.op,
            source=self.source,
        )


def _describe(value: Any) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    return type(value).__qualname__

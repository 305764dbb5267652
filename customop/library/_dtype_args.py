"""``ScalarType`` arguments reach kernels as one kind of dtype: the kind their tensors carry.

Callers spell a dtype many ways: ``np.float16``, ``np.dtype("float16")``,
``torch.float16``, ``"float16"``, ``customop.float16``. A kernel should not
have to handle each (a ``torch.float16`` crashed a numpy kernel's
``x.astype(dtype)``). The rule: a kernel receives a ``ScalarType`` argument
as the same kind of object as its tensor arguments' ``.dtype``:

- numpy (and cupy) arrays: a ``numpy.dtype``;
- torch tensors: a ``torch.dtype``;
- FakeTensors (fake impls): a customop `dtype`;
- no tensor argument: a customop `dtype` (numpy accepts it as a dtype).

NOTE: only kernels of ops with a ``ScalarType`` parameter are wrapped, at
registration; every other op's kernel is registered as given and costs
nothing more per call.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, Final

from customop.schema import BaseType, FunctionSchema, OptionalType
from customop.tensor._dtype import dtype, to_dtype

__all__ = ["canonical_dtypes", "dtype_argument_indices"]

Convert = Callable[[dtype], Any]

_MAX_CACHE: Final = 256


def dtype_argument_indices(schema: FunctionSchema) -> tuple[int, ...]:
    """Indices of the schema's ``ScalarType`` and ``ScalarType?`` arguments."""
    indices = []
    for index, arg in enumerate(schema.arguments):
        inner = arg.type.elem if isinstance(arg.type, OptionalType) else arg.type
        if isinstance(inner, BaseType) and inner.name == "ScalarType":
            indices.append(index)
    return tuple(indices)


def _as_customop(found: dtype) -> dtype:
    return found


def _as_numpy(found: dtype) -> Any:
    return found.numpy


def _as_torch(found: dtype) -> Any:
    return found.to_torch()


def _form_of(reference: object) -> Convert:
    """The converter to the kind of ``reference``, a tensor's ``.dtype``."""
    if isinstance(reference, dtype):
        return _as_customop
    kind = type(reference)
    if kind.__name__ == "dtype" and kind.__module__.partition(".")[0] == "torch":
        return _as_torch
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(reference, numpy.dtype):
        return _as_numpy
    return _as_customop


class _Converter:
    """Converts one op's dtype arguments; caches (target kind, value) -> converted value."""

    __slots__ = ("_api", "_cache", "_forms")

    def __init__(self, api: str) -> None:
        self._api = api
        self._cache: dict[tuple[Convert, object], object] = {}
        self._forms: dict[type, Convert] = {}

    def form(self, tensor: object) -> Convert:
        reference = getattr(tensor, "dtype", None)
        kind = type(reference)
        found = self._forms.get(kind)
        if found is None:
            found = self._forms[kind] = _form_of(reference)
        return found

    def __call__(self, value: object, form: Convert) -> object:
        if value is None:
            return None
        try:
            return self._cache[form, value]
        except KeyError:
            pass
        except TypeError:  # an unhashable value: convert without caching
            return form(to_dtype(value, api=self._api))
        converted = form(to_dtype(value, api=self._api))
        if len(self._cache) >= _MAX_CACHE:
            self._cache.clear()
        self._cache[form, value] = converted
        return converted


def _first_tensor(value: object) -> object:
    if isinstance(value, list | tuple):
        return next((item for item in value if item is not None), None)
    return value


def canonical_dtypes(fn: Callable[..., Any], schema: FunctionSchema) -> Callable[..., Any]:
    """``fn`` receiving its ``ScalarType`` arguments in one kind (see the module docstring).

    Returns ``fn`` itself when the schema has no ``ScalarType`` argument.
    """
    indices = dtype_argument_indices(schema)
    if not indices:
        return fn
    arguments = schema.arguments
    positional = sum(1 for arg in arguments if not arg.kwarg_only)
    dtype_slots = tuple((i, arguments[i].name) for i in indices)
    tensor_slots = tuple((i, arguments[i].name) for i, _ in schema.tensor_argument_positions)
    convert = _Converter(f"{schema.name}: ScalarType argument")

    def pick(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Convert:
        for index, name in tensor_slots:
            value = args[index] if index < len(args) else kwargs.get(name)
            tensor = _first_tensor(value)
            if tensor is not None:
                return convert.form(tensor)
        return _as_customop

    def kernel(*args: Any, **kwargs: Any) -> Any:
        form = pick(args, kwargs)
        if len(args) > indices[0]:
            args = list(args)  # type: ignore[assignment]
            for index, _ in dtype_slots:
                if index < len(args) and index < positional:
                    args[index] = convert(args[index], form)  # type: ignore[index]
        for _, name in dtype_slots:
            if name in kwargs:
                kwargs[name] = convert(kwargs[name], form)
        return fn(*args, **kwargs)

    functools.update_wrapper(kernel, fn)  # dumps and errors name the user's function
    return kernel

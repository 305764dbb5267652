"""``ScalarType`` arguments reach kernels as one kind of dtype, whatever the caller wrote.

Callers spell a dtype many ways: ``np.float16``, ``np.dtype("float16")``,
``torch.float16``, ``"float16"``, ``customop.float16``. A kernel should not
have to handle each (a ``torch.float16`` crashed a numpy kernel's
``x.astype(dtype)``). The rule, per ``ScalarType`` parameter of the kernel:

- annotated ``numpy.dtype``, ``torch.dtype`` or ``customop.dtype`` (also
  inside ``Optional``): that kind;
- otherwise, the kind of the call's tensor arguments' own ``.dtype``: a
  ``numpy.dtype`` for numpy (and cupy) arrays, a ``torch.dtype`` for torch
  tensors, a customop `dtype` for FakeTensors (fake impls);
- with no tensor argument either, a customop `dtype` (numpy takes it as a dtype).

NOTE: only kernels of ops with a ``ScalarType`` parameter are wrapped, at
registration; every other op's kernel is registered as given and costs
nothing more per call.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, Final

from customop.schema import BaseType, FunctionSchema, OptionalType
from customop.tensor import dtype, to_dtype

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


def _annotated_form(annotation: object) -> Convert | None:
    """The converter a parameter's annotation asks for, or None for "the tensors' kind"."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _annotated_form(inner[0]) if len(inner) == 1 else None
    annotation = typing.get_origin(annotation) or annotation  # numpy.dtype[Any] -> numpy.dtype
    if annotation is dtype:
        return _as_customop
    if isinstance(annotation, type) and annotation.__name__ == "dtype":
        root = annotation.__module__.partition(".")[0]
        return {"numpy": _as_numpy, "torch": _as_torch}.get(root)
    return None


def _annotated_forms(fn: Callable[..., Any], names: list[str]) -> list[Convert | None]:
    """Per parameter name: the kind its annotation asks for (None: decided per call)."""
    target = inspect.unwrap(fn)
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # unresolvable hints (a missing import): decided per call instead
        hints = {}
    return [_annotated_form(hints.get(name)) for name in names]


class _Converter:
    """Converts one op's dtype arguments; caches target kind -> value -> converted value.

    A dict per kind, not one keyed by (kind, value) pairs: a call then builds
    and hashes no tuple.
    """

    __slots__ = ("_api", "_cache", "_forms")

    def __init__(self, api: str) -> None:
        self._api = api
        self._cache: dict[Convert, dict[object, object]] = {}
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
        cache = self._cache.get(form)
        if cache is None:
            cache = self._cache[form] = {}
        try:
            return cache[value]
        except KeyError:
            pass
        except TypeError:  # an unhashable value: convert without caching
            return form(to_dtype(value, api=self._api))
        converted = form(to_dtype(value, api=self._api))
        if len(cache) >= _MAX_CACHE:
            cache.clear()
        cache[value] = converted
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
    names = [arguments[i].name for i in indices]
    forms = _annotated_forms(fn, names)
    dtype_slots = tuple(zip(indices, names, forms, strict=True))
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
        tensors: Convert | None = None  # the tensors' kind, looked up once if needed
        if len(args) > indices[0]:
            args = list(args)  # type: ignore[assignment]
            for index, _, form in dtype_slots:
                if index < len(args) and index < positional:
                    if form is None:
                        tensors = tensors or pick(args, kwargs)
                    args[index] = convert(args[index], form or tensors or _as_customop)  # type: ignore[index]
        for _, name, form in dtype_slots:
            if name in kwargs:
                if form is None:
                    tensors = tensors or pick(args, kwargs)
                kwargs[name] = convert(kwargs[name], form or tensors or _as_customop)
        return fn(*args, **kwargs)

    wrapper = _fast_path(kernel, fn, schema, dtype_slots, convert) or kernel
    functools.update_wrapper(wrapper, fn)  # dumps and errors name the user's function
    return wrapper


def _fast_path(
    general: Callable[..., Any],
    fn: Callable[..., Any],
    schema: FunctionSchema,
    dtype_slots: tuple[tuple[int, str, Convert | None], ...],
    convert: _Converter,
) -> Callable[..., Any] | None:
    """The common case: one positional ``ScalarType`` after a plain ``Tensor``.

    Reads the converted value from the cache the general path fills: about
    one dict lookup more than calling ``fn`` directly.
    """
    arguments = schema.arguments
    if len(dtype_slots) != 1 or arguments[dtype_slots[0][0]].kwarg_only:
        return None
    index, _, annotated = dtype_slots[0]
    first = next((i for i, arg in enumerate(arguments) if i != index and not arg.kwarg_only), None)
    tensor = arguments[first].type if first is not None else None
    if not (isinstance(tensor, BaseType) and tensor.name == "Tensor") or first is None:
        return None
    reference = first
    cache, forms = convert._cache, convert._forms

    def kernel(*args: Any, **kwargs: Any) -> Any:
        if len(args) > index:
            form = annotated or forms.get(type(getattr(args[reference], "dtype", None)))
            if form is not None:
                try:
                    value = cache[form][args[index]]
                except (KeyError, TypeError):
                    pass  # not seen yet, or unhashable: the general path
                else:
                    given = list(args)  # cheaper than slicing around the one value
                    given[index] = value
                    return fn(*given, **kwargs)
        return general(*args, **kwargs)

    return kernel

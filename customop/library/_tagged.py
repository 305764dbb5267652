"""Fake impls: marked for ``get_ctx``; generated ones (tagged ops, ``-> ()`` ops); return checks.

NOTE: no per-call wrapper around a fake impl. A wrapper that set a context
variable around every call cost about 0.4 µs, most of the fake-mode call
budget (1 µs). Instead the fake impl's code object is recorded at
registration (`remember_fake_impl`), and ``get_ctx()`` (rare) looks for it
among its callers' frames.

A ``@custom_op`` that writes an input and returns nothing gets `trivial_fake`.
Ops tagged ``inplace`` or ``out`` get theirs as follows.

As in torch 2.13:

* a definition with either tag is checked against the tag's rules
  (`customop.schema._tags`), and gets a generated fake impl that returns the
  mutated argument (``inplace``) or the ``out`` arguments (``out``), so the
  op runs on fakes without a ``register_fake``. It is the op's ``Fake``
  kernel, shown in ``dump`` with the definition's source;
* a fake impl registered over the generated one replaces it with torch's
  ``UserWarning`` (the registration is unnecessary) instead of customop's
  `KernelOverrideWarning`; removing it brings the generated one back;
* a ``@custom_op``'s kernels are checked on every call: an ``inplace`` kernel
  must return its first argument, an ``out`` kernel its ``out`` arguments
  (`KernelReturnError`, a ``RuntimeError`` as torch's), and an ``out`` op
  refuses torch tensors that require grad while grad mode is on (torch's
  "functions with out=... arguments don't support automatic
  differentiation"). Only tagged ops pay for the checks.
"""

from __future__ import annotations

import functools
import inspect
import sys
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final, NoReturn

from customop.dispatch import Dispatcher, DispatchKey, OperatorHandle, user_stacklevel
from customop.exceptions import (
    AutogradError,
    KernelOverrideWarning,
    KernelReturnError,
    RegistrationError,
)
from customop.schema import (
    INPLACE,
    AliasingTag,
    FunctionSchema,
    aliasing_tag,
    check_tagged_schema,
    torch_spelling,
)
from customop.tensor import FAKE_IMPL_CODES

__all__ = [
    "checked_returns",
    "fake_over_generated",
    "generated_fake",
    "is_generated_fake",
    "mark_generated",
    "out_names",
    "refuse_fake_over_decomposition",
    "remember_fake_impl",
    "tagged_kernels",
    "trivial_fake",
]

#: The fakes made here, by identity: a registration over one replaces it quietly.
_GENERATED: Final[weakref.WeakSet[Callable[..., Any]]] = weakref.WeakSet()


def out_names(schema: FunctionSchema) -> tuple[str, ...]:
    """The keyword-only arguments an ``out`` op writes, in schema order."""
    return tuple(arg.name for arg in schema.kwarg_only_arguments if arg.is_write)


def generated_fake(schema: FunctionSchema, tag: AliasingTag) -> Callable[..., Any]:
    """The fake impl a tagged op gets: it returns what the kernel must return."""
    if tag == INPLACE:

        def fake(*args: Any, **kwargs: Any) -> Any:
            return args[0]

    else:
        names = out_names(schema)
        if len(names) == 1:
            (only,) = names

            def fake(*args: Any, **kwargs: Any) -> Any:
                return kwargs[only]

        else:

            def fake(*args: Any, **kwargs: Any) -> Any:
                return tuple(kwargs[name] for name in names)

    fake.__name__ = fake.__qualname__ = f"generated_{tag}_fake"
    return mark_generated(fake)


def mark_generated(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Count ``fn`` as a generated fake: a registration over it replaces it quietly."""
    _GENERATED.add(fn)
    return fn


def is_generated_fake(fn: object) -> bool:
    """Whether ``fn`` is a fake impl `generated_fake` made."""
    try:
        return fn in _GENERATED
    except TypeError:  # an unhashable kernel object is not one of ours
        return False


def mutates_and_returns_nothing(*args: object, **kwargs: object) -> None:
    """The generated fake impl of an op that writes its inputs and returns nothing."""
    return None


def trivial_fake(schema: FunctionSchema) -> Callable[..., None] | None:
    """The fake impl a ``@custom_op`` gets without ``register_fake``, or None.

    torch's rule (``can_generate_trivial_fake_impl``): an op that writes to an
    input and returns nothing (``-> ()``) has nothing to fake, so its fake impl
    returns None. (A functional op returning nothing is suspicious; like torch,
    it gets none.) It is registered as the op's ``Meta`` kernel, which the
    ``Fake`` key uses when no fake impl is registered: ``register_fake``
    overrides it without a warning, and removing that restores it.
    """
    if schema.returns or not schema.is_mutable:
        return None
    return mark_generated(mutates_and_returns_nothing)


def refuse_fake_over_decomposition(op: OperatorHandle, api: str) -> None:
    """Refuse a fake impl for an op whose CompositeImplicitAutograd kernel would hide it.

    A CompositeImplicitAutograd kernel serves the Autograd keys, which every
    FakeTensor carries above ``Fake``, so the decomposition runs on fakes and a
    fake impl never would. torch refuses this registration too.
    """
    record = op._entry.top(DispatchKey.CompositeImplicitAutograd)
    if record is None:
        return
    raise RegistrationError(
        f"{api}: {op.name} has a CompositeImplicitAutograd kernel ({record.label}), so a fake "
        "impl would never run: that kernel serves the Autograd keys above Fake and "
        "decomposes the op on fakes too. Register the body as CompositeExplicitAutograd "
        "(register_kernel(op, 'default', fn) or Library.impl(name, fn, "
        "'CompositeExplicitAutograd')) and then its fake impl, or drop the fake impl and let "
        "the decomposition compute fake results."
    )


def remember_fake_impl(fn: Callable[..., Any], op: str) -> Callable[..., Any]:
    """Record ``fn`` as the fake impl of ``op`` (for ``get_ctx``); returns ``fn`` itself."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is not None:
        FAKE_IMPL_CODES[code] = op
    return fn


def tagged_kernels(
    schema: FunctionSchema,
    tags: tuple[Any, ...],
    kernels: Mapping[DispatchKey | str, Callable[..., Any]] | None,
    api: str,
) -> Mapping[DispatchKey | str, Callable[..., Any]] | None:
    """A definition's first kernels, with the generated fake of its aliasing tag.

    Checks the schema against the tag first (validate, then register).
    """
    tag = aliasing_tag(tags, api)
    if tag is None:
        return kernels
    check_tagged_schema(schema, tag, api)
    given = dict(kernels or {})
    if not any(key in (DispatchKey.Fake, "Fake") for key in given):
        given[DispatchKey.Fake] = generated_fake(schema, tag)
    return given


@contextmanager
def fake_over_generated(
    dispatcher: Dispatcher, op: str, key: DispatchKey | None = DispatchKey.Fake
) -> Iterator[None]:
    """Around a registration for ``key``: over a generated fake, torch's warning, not ours."""
    handle = dispatcher.find_op(op) if key is DispatchKey.Fake else None
    top = None if handle is None else handle._entry.top(DispatchKey.Fake)
    if top is None or not is_generated_fake(top.fn) or handle is None:
        yield
        return
    tag = aliasing_tag(handle.tags, "register_fake") or INPLACE
    warnings.warn(
        f"The fake registration for {op!r} is unnecessary. Custom ops tagged with "
        f"{torch_spelling(tag)} already get an autogenerated fake kernel. The provided fake "
        "impl will be used instead.",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
    # The generated fake is a default meant to be replaced: no override warning on top.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KernelOverrideWarning)
        yield


def checked_returns(
    fn: Callable[..., Any], schema: FunctionSchema, tags: tuple[Any, ...]
) -> Callable[..., Any]:
    """``fn``, raising `KernelReturnError` when it does not return what its tag says.

    ``fn`` itself for an op with no aliasing tag: only tagged ops pay for the check.
    """
    tag = aliasing_tag(tags, "custom_op")
    if tag is None:
        return fn
    name = str(schema.name)
    where = getattr(inspect.getmodule(fn), "__name__", "?")
    kernel = getattr(fn, "__name__", repr(fn))
    if tag == INPLACE:

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            result = fn(*args, **kwargs)
            if result is not args[0]:
                _wrong(f"{name}: the kernel {kernel} (with implementation in {where})", "inplace")
            return result

    else:
        names = out_names(schema)

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            if _requires_grad(args, kwargs):
                _no_grad(name)
            result = fn(*args, **kwargs)
            if len(names) == 1:
                ok = result is kwargs[names[0]]
            else:
                ok = type(result) is tuple and len(result) == len(names)
                ok = ok and all(r is kwargs[n] for r, n in zip(result, names, strict=True))
            if not ok:
                _wrong(f"{name}: the kernel {kernel} (with implementation in {where})", "out")
            return result

    return checked


def _requires_grad(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether torch would record gradients for a torch tensor among the arguments."""
    torch = sys.modules.get("torch")  # a torch tensor among them means torch is imported
    if torch is None or not torch.is_grad_enabled():
        return False
    values = (*args, *kwargs.values())
    return any(getattr(value, "requires_grad", False) is True for value in values)


def _no_grad(op: str) -> NoReturn:
    raise AutogradError(
        f"{op}(): functions with out=... arguments don't support automatic differentiation, "
        "but one of the arguments requires grad. An out= op writes into buffers the caller "
        "passed in, which autograd cannot track, as in torch. Call it under torch.no_grad(), "
        "or call the functional op instead."
    )


def _wrong(kernel: str, tag: AliasingTag) -> NoReturn:
    what = "its first argument" if tag == INPLACE else "its mutable keyword-only arguments"
    raise KernelReturnError(
        f"{kernel} did not return {what}. An operator tagged with {torch_spelling(tag)} must "
        f"return {what}: callers take the result as the tensor{'s' if tag == 'out' else ''} "
        f"written in place. Return {what} from the kernel."
    )

"""One customop operator defined in torch.library: its def, kernels, fake, formula, tags.

A `TorchMirror` defines the op in torch with customop's schema text (in a
FRAGMENT library of its own) and registers, in a second library, one
trampoline per torch key that has a customop counterpart. A trampoline asks
customop for the op's *current* kernel on every call, so a kernel replaced in
customop reaches torch at once; only a change in *which* keys have kernels
(a first CUDA kernel, a fake impl added or removed, a formula) rebuilds the
second library (`sync`).

Key mapping (customop -> torch): CPU, CUDA, PrivateUse1, Meta,
CompositeExplicitAutograd and CompositeImplicitAutograd keep their names;
customop's fake impl becomes torch's fake (``torch.library.register_fake``),
which also serves torch's Meta key, so a customop Meta kernel is mirrored only
when the op has no fake; customop's autograd formula becomes
``torch.library.register_autograd`` and its batching rule
``torch.library.register_vmap``. Mutating ops get an ADInplaceOrView
kernel that bumps the version counter of each mutated tensor, as torch's
``custom_op`` does.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from typing import Any, Final, NamedTuple

import torch

from customop.adapter import definition_of, select_kernel
from customop.dispatch import DispatchKey, DispatchKeySet, OperatorHandle, epoch
from customop.exceptions import RegistrationError
from customop.library import TORCH_DISPATCH
from customop.schema import FunctionSchema
from customop.torch._autograd import (
    AUTOGRAD_KEYS,
    autograd_trampoline,
    has_formula,
    register_formula,
)
from customop.torch._eager import KernelLibrary, Trampoline
from customop.torch._fake import fake_trampoline
from customop.torch._gate import Gate
from customop.torch._vmap import has_rule, register_rule

__all__ = ["BACKEND_KEYS", "TorchMirror", "mutated_positions", "torch_uniform"]

#: customop keys mirrored as torch kernels, with torch's name for each.
_KERNEL_KEYS: Final = (
    DispatchKey.CPU,
    DispatchKey.CUDA,
    DispatchKey.PrivateUse1,
    DispatchKey.Meta,
    DispatchKey.CompositeExplicitAutograd,
    DispatchKey.CompositeImplicitAutograd,
)
#: The runtime backend keys: what a trampoline keeps of customop's keys for a call.
BACKEND_KEYS: Final = DispatchKeySet(*(key for key in DispatchKey if key.is_backend))
_META_BITS: Final = DispatchKeySet(DispatchKey.Meta).bits
_FAKE_BITS: Final = DispatchKeySet(DispatchKey.Fake).bits
#: Backends a torch tensor always maps to; PrivateUse2/3 only when renamed to a torch
#: device type (the dask adapter's "dask" PrivateUse3 never is).
_TORCH_BACKENDS: Final = (
    DispatchKey.CPU,
    DispatchKey.CUDA,
    DispatchKey.PrivateUse1,
    DispatchKey.Meta,
)
_REACHABLE: dict[tuple[object, int], tuple[int, ...]] = {}
#: Whether a backend name is a torch device type, asked once per name: Dynamo may
#: trace a trampoline, and cannot trace the RuntimeError torch.device raises.
_TORCH_DEVICES: dict[str, bool] = {}


def _is_torch_device(name: str) -> bool:
    found = _TORCH_DEVICES.get(name)
    if found is None:
        try:
            torch.device(name)
            found = True
        except RuntimeError:
            found = False
        _TORCH_DEVICES[name] = found
    return found


def _reachable(handle: OperatorHandle) -> tuple[int, ...]:
    """Key bits of each backend a torch tensor can pick in ``handle``'s dispatcher."""
    dispatcher = handle.dispatcher
    token = epoch.token  # renames advance the epoch
    found = _REACHABLE.get((token, id(dispatcher)))
    if found is None:
        keys = [*_TORCH_BACKENDS]
        keys += [
            key
            for key in (DispatchKey.PrivateUse2, DispatchKey.PrivateUse3)
            if _is_torch_device(dispatcher.key_name(key))
        ]
        found = tuple(DispatchKeySet(key).bits for key in keys)
        if len(_REACHABLE) > 64:
            _REACHABLE.clear()
        _REACHABLE[(token, id(dispatcher))] = found
    return found


def torch_uniform(handle: OperatorHandle, *, in_torch: bool = False) -> Callable[..., Any] | None:
    """The one kernel that serves every backend a torch tensor can have (a
    CompositeExplicitAutograd body), which then runs for any torch device; else None.

    ``in_torch``: asked by torch's CompositeExplicitAutograd kernel, which meta
    tensors never reach when the op has a fake impl (torch's register_fake is
    its Meta kernel), so a Meta kernel that is the fake impl does not count.
    """
    fake = select_kernel(handle, _FAKE_BITS) if in_torch else None
    (_, first), *others = ((bits, select_kernel(handle, bits)) for bits in _reachable(handle))
    if isinstance(first, partial):
        return None  # boxed kernels come bound anew each time: never one for all
    for bits, kernel in others:
        if kernel is not first and not (bits == _META_BITS and kernel is fake):
            return None
    return first


#: torch.library, untyped for mypy (its functions are not annotated).
_library: Any = torch.library


def _torch_entry(op: Any) -> Any:
    """What calling the torch op ``op`` runs, minus one Python frame.

    ``OpOverload.__call__`` is ``return self._op(*args, **kwargs)`` (pinned by
    tests/torch/test_callpath.py): its C callable, called directly, is the same
    call a Python frame (about 0.3 us here) cheaper, which pays for the gate and
    keeps customop's hand-over to torch as cheap as calling
    ``torch.ops.<ns>.<name>.<overload>`` (issue #29). An op whose type calls
    differently is called as it is.
    """
    entry = getattr(op, "_op", None)
    if type(op).__call__ is torch._ops.OpOverload.__call__ and callable(entry):
        return entry
    return op


def _tag(name: str) -> Any:
    return getattr(torch.Tag, name, None)


def mutated_positions(schema: FunctionSchema) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Positions of the mutated positional arguments, and names of the keyword-only ones."""
    positions: list[int] = []
    names: list[str] = []
    for index, arg in enumerate(schema.arguments):
        if arg.is_write:  # Tensor(a!), and lists: Tensor(a!)[], Tensor(a!)?[]
            (names.append(arg.name) if arg.kwarg_only else positions.append(index))
    return tuple(positions), tuple(names)


class _Wanted(NamedTuple):
    """What torch gets for an op now; a change rebuilds its kernel library."""

    keys: tuple[DispatchKey, ...]  # kernel keys, as in customop
    autograd: tuple[DispatchKey, ...]  # per-backend autograd keys with customop kernels
    fake: bool
    formula: bool  # torch's autograd kernel: a formula, or a @custom_op's
    rules: tuple[tuple[type, Callable[..., Any]], ...]  # torch dispatch rules
    vmap: bool  # a customop batching rule, as torch's vmap rule


class TorchMirror:
    """The torch side of one customop operator (overload)."""

    def __init__(self, handle: OperatorHandle) -> None:
        schema = handle.schema
        assert schema.name is not None  # a defined op's schema always has its name
        self.handle = handle
        self.schema = schema
        #: Calls customop's objects hand to torch, against changes of the registration.
        self.gate = Gate()
        self.qualname = f"{schema.name.namespace}::{schema.name.name}"
        self.overload = schema.name.overload or "default"
        self._def_lib: Any = _library.Library(schema.namespace, "FRAGMENT")
        self._impl_lib: KernelLibrary | None = None
        self._wanted: _Wanted | None = None
        #: Once a @custom_op, always one while this def lives (see `_wanted_now`).
        self._custom_op = False
        text = str(schema).split("::", 1)[1]
        tags = tuple(t for t in map(_tag, handle.tags) if t is not None)
        try:
            self._def_lib.define(text, tags=tags)
        except RuntimeError as error:
            self._def_lib._destroy()
            raise RegistrationError(
                f"customop.torch.register: torch refused to define {str(schema.name)!r}: "
                f"{str(error).splitlines()[0][:200]}. The op must not be defined in torch by "
                "other code. Remove the other torch definition, or rename one of them."
            ) from None
        packet = getattr(getattr(torch.ops, schema.namespace), schema.name.name)
        #: ``torch.ops.<ns>.<name>.<overload>``; never called after `close`.
        self.torch_op: Any = getattr(packet, self.overload)
        #: What calling `torch_op` runs, without its Python frame (issue #29).
        self.torch_entry: Any = _torch_entry(self.torch_op)
        try:
            self.sync()
        except BaseException:
            self.close()
            raise

    def _wanted_now(self) -> _Wanted:
        registered = self.handle.kernel_keys()
        has_fake = DispatchKey.Fake in registered
        keys = tuple(
            key
            for key in _KERNEL_KEYS
            if key in registered and not (key is DispatchKey.Meta and has_fake)
        )
        # An Autograd alias kernel serves every backend's autograd key, in both.
        everywhere = DispatchKey.Autograd in registered
        autograd = tuple(k for k in AUTOGRAD_KEYS if everywhere or k in registered)
        # torch's custom_op gives every op an autograd kernel: backward through
        # one without a formula raises torch's "no autograd formula" error.
        # Sticky: a redefinition closes the old @custom_op's registrations one by
        # one, its definition record before its kernels, and calls in other threads
        # must never meet its kernel without an autograd kernel (torch would then
        # run backward through its not-implemented fallback: gradients silently lost).
        if not self._custom_op:
            self._custom_op = definition_of(self.handle, self.handle.dispatcher) is not None
        defined = self._custom_op
        rules = self.handle.extra(TORCH_DISPATCH)
        return _Wanted(
            keys,
            autograd,
            has_fake,
            defined or has_formula(self.handle),
            tuple(rules.items()) if rules else (),
            has_rule(self.handle),
        )

    def sync(self) -> None:
        """Make torch's kernels, fake and formula follow which ones customop has now."""
        wanted = self._wanted_now()
        if wanted == self._wanted:
            return
        _reachable(self.handle)  # here, not first inside a trampoline Dynamo may trace
        old, self._impl_lib, self._wanted = self._impl_lib, None, None
        # Idle: calls wait while the kernels are replaced. In use by a call of
        # customop's objects (see _gate): the new kernels go in over the old ones,
        # which stay until the last such call leaves.
        held = self.gate.hold_if_idle()
        overlap = old is not None and not held
        try:
            if old is not None and held:
                old.destroy()
            lib = KernelLibrary(self.schema.namespace)
            try:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message=".*[Oo]verrid")  # torch says so
                    self._register(lib, wanted, rules=not overlap)
            except BaseException:
                lib.destroy()
                raise
            self._impl_lib, self._wanted = lib, wanted
        finally:
            if held:
                self.gate.release()
        if overlap:
            assert old is not None

            def replace() -> None:
                old.destroy()
                # torch keeps one dispatch rule per op and class: the new ones now.
                for cls, rule in wanted.rules:
                    lib.register_torch_dispatch(self._qualified, cls, rule)

            self.gate.defer(replace)

    def _register(self, lib: KernelLibrary, wanted: _Wanted, *, rules: bool = True) -> None:
        name = self.schema.name
        assert name is not None
        impl_name = f"{name.name}.{name.overload}" if name.overload else name.name
        for key in wanted.keys:
            lib.impl(impl_name, _backend_trampoline(self.handle, key), key.name)
        for key in wanted.autograd:
            lib.impl(impl_name, autograd_trampoline(self.handle, key), key.name)
        if wanted.fake:
            lib.register_fake(self._qualified, fake_trampoline(self.handle))
        if wanted.formula:
            register_formula(self.handle, self.torch_op, lib, impl_name)
        if wanted.vmap:
            register_rule(self.handle, lib)
        for cls, rule in wanted.rules if rules else ():  # register_torch_dispatch rules
            lib.register_torch_dispatch(self._qualified, cls, rule)
        positions, names = mutated_positions(self.schema)
        if positions or names:
            self._register_version_bump(lib, impl_name, positions, names)

    def _register_version_bump(
        self, lib: Any, impl_name: str, positions: tuple[int, ...], names: tuple[str, ...]
    ) -> None:
        ad_inplace_or_view = _VersionBump(self.torch_op, positions, names)
        with warnings.catch_warnings():
            # torch warns once per process that ADInplaceOrView kernels exist at all.
            warnings.filterwarnings("ignore", message="Warning only once for all operators")
            lib.impl(impl_name, ad_inplace_or_view, "ADInplaceOrView", with_keyset=True)

    @property
    def _qualified(self) -> str:
        """``ns::name`` or ``ns::name.overload``, as torch.library's registrations take it."""
        return f"{self.qualname}.{self.overload}" if self.schema.name.overload else self.qualname  # type: ignore[union-attr]

    def close(self) -> None:
        """Remove everything this mirror registered in torch (idempotent), once the
        calls customop's objects have inside it are done (see _gate: call it
        outside the registration lock)."""
        self.torch_op = None  # calls from now on take customop's own path
        self.torch_entry = None
        impl, self._impl_lib = self._impl_lib, None
        lib, self._def_lib = self._def_lib, None

        def destroy() -> None:
            if impl is not None:
                impl.destroy()
            if lib is not None:
                lib._destroy()  # also drops torch.ops' cached packet of the op

        self.gate.drain_then(destroy)


def _bump_all(bump: Callable[[Any], None], value: Any) -> None:
    if value is None:
        return
    if isinstance(value, torch.Tensor):
        bump((value,))
    else:
        bump(tuple(t for t in value if t is not None))


def _backend_trampoline(handle: OperatorHandle, key: DispatchKey) -> Trampoline:
    """torch's kernel for ``key``: customop's current kernel for the same backend.

    A backend key's trampoline reads customop's slot of that key. The
    Composite ones serve every backend: when customop's table has one kernel
    for all backends (a CompositeExplicitAutograd body) any slot will do,
    else the call's own backend keys pick it.
    """
    return _BackendKernel(handle, key) if key.is_backend else _CompositeKernel(handle)


class _BackendKernel(Trampoline):
    __slots__ = ("bits", "handle")

    def __init__(self, handle: OperatorHandle, key: DispatchKey) -> None:
        self.handle, self.bits = handle, DispatchKeySet(key).bits

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return select_kernel(self.handle, self.bits)(*args, **kwargs)


class _CompositeKernel(Trampoline):
    # seen: (the epoch of the last check, the uniform kernel then or None): one
    # tuple, so a thread never reads one check's epoch with another's kernel.
    __slots__ = ("handle", "seen")

    def __init__(self, handle: OperatorHandle) -> None:
        self.handle = handle
        self.seen: tuple[Any, Callable[..., Any] | None] = (None, None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        handle = self.handle
        token = epoch.token
        seen = self.seen
        if seen[0] is not token:
            seen = self.seen = (token, torch_uniform(handle, in_torch=True))
        uniform = seen[1]
        if uniform is not None:
            return uniform(*args, **kwargs)
        keys = handle.dispatch_keyset(*args, **kwargs) & BACKEND_KEYS
        return handle.redispatch(keys, *args, **kwargs)


class _VersionBump(Trampoline):
    """ADInplaceOrView: bump the version counter of each mutated tensor, then go below."""

    __slots__ = ("names", "op", "positions")

    def __init__(self, op: Any, positions: tuple[int, ...], names: tuple[str, ...]) -> None:
        self.op, self.positions, self.names = op, positions, names

    def __call__(self, keyset: Any, *args: Any, **kwargs: Any) -> Any:
        bump = torch._C._increment_version
        for index in self.positions:
            _bump_all(bump, args[index])
        for key in self.names:
            _bump_all(bump, kwargs.get(key))
        return self.op.redispatch(keyset & torch._C._after_ADInplaceOrView_keyset, *args, **kwargs)

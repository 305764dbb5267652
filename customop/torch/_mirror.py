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
from typing import Any, Final

import torch

from customop.adapter import select_kernel
from customop.dispatch import DispatchKey, DispatchKeySet, OperatorHandle, epoch
from customop.exceptions import RegistrationError
from customop.schema import FunctionSchema
from customop.torch._autograd import has_formula, register_formula
from customop.torch._fake import fake_trampoline
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
#: Backends a torch tensor always maps to; PrivateUse2/3 only when renamed to a torch
#: device type (the dask adapter's "dask" PrivateUse3 never is).
_TORCH_BACKENDS: Final = (
    DispatchKey.CPU,
    DispatchKey.CUDA,
    DispatchKey.PrivateUse1,
    DispatchKey.Meta,
)
_REACHABLE: dict[tuple[object, int], tuple[int, ...]] = {}


def _is_torch_device(name: str) -> bool:
    try:
        torch.device(name)
    except RuntimeError:
        return False
    return True


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


def torch_uniform(handle: OperatorHandle) -> Callable[..., Any] | None:
    """The one kernel that serves every backend a torch tensor can have (a
    CompositeExplicitAutograd body), which then runs for any torch device; else None."""
    first, *others = (select_kernel(handle, bits) for bits in _reachable(handle))
    if isinstance(first, partial) or any(kernel is not first for kernel in others):
        return None  # boxed kernels come bound anew each time: never one for all
    return first


#: torch.library, untyped for mypy (its functions are not annotated).
_library: Any = torch.library


def _tag(name: str) -> Any:
    return getattr(torch.Tag, name, None)


def mutated_positions(schema: FunctionSchema) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Positions of the mutated positional arguments, and names of the keyword-only ones."""
    positions: list[int] = []
    names: list[str] = []
    for index, arg in enumerate(schema.arguments):
        if arg.alias_info is not None and arg.alias_info.is_write:
            (names.append(arg.name) if arg.kwarg_only else positions.append(index))
    return tuple(positions), tuple(names)


class TorchMirror:
    """The torch side of one customop operator (overload)."""

    def __init__(self, handle: OperatorHandle) -> None:
        schema = handle.schema
        assert schema.name is not None  # a defined op's schema always has its name
        self.handle = handle
        self.schema = schema
        self.qualname = f"{schema.name.namespace}::{schema.name.name}"
        self.overload = schema.name.overload or "default"
        self._def_lib: Any = _library.Library(schema.namespace, "FRAGMENT")
        self._impl_lib: Any = None
        self._wanted: tuple[object, ...] | None = None
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
        try:
            self.sync()
        except BaseException:
            self.close()
            raise

    def _wanted_now(self) -> tuple[object, ...]:
        registered = self.handle.kernel_keys()
        has_fake = DispatchKey.Fake in registered
        keys = tuple(
            key
            for key in _KERNEL_KEYS
            if key in registered and not (key is DispatchKey.Meta and has_fake)
        )
        return (keys, has_fake, has_formula(self.handle), has_rule(self.handle))

    def sync(self) -> None:
        """Make torch's kernels, fake and formula follow which ones customop has now."""
        wanted = self._wanted_now()
        if wanted == self._wanted:
            return
        keys, has_fake, formula, rule = wanted
        old, self._impl_lib = self._impl_lib, None
        if old is not None:
            old._destroy()
        self._wanted = None
        lib = _library.Library(self.schema.namespace, "FRAGMENT")
        try:
            self._register(lib, keys, has_fake, formula, rule)  # type: ignore[arg-type]
        except BaseException:
            lib._destroy()
            raise
        self._impl_lib = lib
        self._wanted = wanted

    def _register(
        self,
        lib: Any,
        keys: tuple[DispatchKey, ...],
        has_fake: bool,
        formula: object,
        rule: object,
    ) -> None:
        name = self.schema.name
        assert name is not None
        impl_name = f"{name.name}.{name.overload}" if name.overload else name.name
        for key in keys:
            lib.impl(impl_name, _backend_trampoline(self.handle, key), key.name)
        if has_fake:
            _library.register_fake(
                f"{self.qualname}.{self.overload}" if name.overload else self.qualname,
                fake_trampoline(self.handle),
                lib=lib,
            )
        if formula:
            register_formula(self, lib)
        if rule:
            register_rule(self, lib)
        positions, names = mutated_positions(self.schema)
        if positions or names:
            self._register_version_bump(lib, impl_name, positions, names)

    def _register_version_bump(
        self, lib: Any, impl_name: str, positions: tuple[int, ...], names: tuple[str, ...]
    ) -> None:
        op = self.torch_op
        after = torch._C._after_ADInplaceOrView_keyset
        bump = torch._C._increment_version

        def ad_inplace_or_view(keyset: Any, *args: Any, **kwargs: Any) -> Any:
            for index in positions:
                _bump_all(bump, args[index])
            for key in names:
                _bump_all(bump, kwargs.get(key))
            return op.redispatch(keyset & after, *args, **kwargs)

        with warnings.catch_warnings():
            # torch warns once per process that ADInplaceOrView kernels exist at all.
            warnings.filterwarnings("ignore", message="Warning only once for all operators")
            lib.impl(impl_name, ad_inplace_or_view, "ADInplaceOrView", with_keyset=True)

    def close(self) -> None:
        """Remove everything this mirror registered in torch (idempotent)."""
        self.torch_op = None
        impl, self._impl_lib = self._impl_lib, None
        if impl is not None:
            impl._destroy()
        lib, self._def_lib = self._def_lib, None
        if lib is not None:
            lib._destroy()  # also drops torch.ops' cached packet of the op


def _bump_all(bump: Callable[[Any], None], value: Any) -> None:
    if value is None:
        return
    if isinstance(value, torch.Tensor):
        bump((value,))
    else:
        bump(tuple(t for t in value if t is not None))


def _backend_trampoline(handle: OperatorHandle, key: DispatchKey) -> Callable[..., Any]:
    """torch's kernel for ``key``: customop's current kernel for the same backend.

    A backend key's trampoline reads customop's slot of that key. The
    Composite ones serve every backend: when customop's table has one kernel
    for all backends (a CompositeExplicitAutograd body) any slot will do,
    else the call's own backend keys pick it.
    """
    if key.is_backend:
        bits = DispatchKeySet(key).bits

        def kernel(*args: Any, **kwargs: Any) -> Any:
            return select_kernel(handle, bits)(*args, **kwargs)

    else:
        keys_of = handle.dispatch_keyset
        redispatch = handle.redispatch
        backend = BACKEND_KEYS
        # The uniform kernel as of the last registration change (None: not uniform).
        seen: list[Any] = [None, None]

        def kernel(*args: Any, **kwargs: Any) -> Any:
            token = epoch.token
            if seen[0] is not token:
                seen[0], seen[1] = token, torch_uniform(handle)
            uniform = seen[1]
            if uniform is not None:
                return uniform(*args, **kwargs)
            return redispatch(keys_of(*args, **kwargs) & backend, *args, **kwargs)

    kernel.__name__ = kernel.__qualname__ = f"customop_{handle.name.name}_{key.name}"
    return kernel

"""The torch-aware call of a mirrored op: generated code with an eager fast path.

While an op is registered in torch, its customop call objects (the
`CustomOpDef`, its `OpOverload`s, the ``customop.ops`` packet) call through a
function generated for the op's schema (shown in tracebacks as
``<customop torch ns::op>``):

1. under Dynamo (``torch.compiler.is_dynamo_compiling()``, which Dynamo
   folds to True), call ``torch.ops.<ns>.<name>.<overload>``: the graph gets
   one node, and Dynamo never reads the rest;
2. the fast path: every argument has the types of the cached call, customop's
   own local keys are the default ones, every tensor is exactly
   ``torch.Tensor`` and on the cpu (or the op has one kernel for every
   backend a torch tensor can be on: `torch_uniform`), no torch dispatch or
   function mode is active, no ``torch.func`` transform runs (its wrapper
   tensors have no storage), and no tensor needs grad (or grad mode is off).
   Then the op's customop kernel runs directly, and mutated tensors get
   their version counter bumped. Each check is a C call or a tensor
   attribute (30-75 ns here; most of torch's run its error handler, about
   35 ns, whatever they do): ``requires_grad`` comes before
   ``is_grad_enabled()``, which is cheaper while grad mode is on;
3. everything else goes to `TorchCall.slow`: binding errors, customop's
   argument checks and non-torch arrays go to customop's own call code; a
   call that meets the fast-path rules runs the kernel (and fills the cache);
   any other call goes through ``torch.ops`` with torch's full semantics.

The cache is one entry (``[local keys, type of each argument..., kernel,
uniform, item types of each list...]``, the argument types as one tuple from
`_GROUPED_TYPES` arguments on) in the function's globals, emptied by
customop's epoch clock on every registration change.

NOTE: the function is a plain method (``_co_self`` first), not customop's
usual ``staticmethod`` (about 20 ns cheaper per call): Dynamo 2.13 inlines a
user object's ``__call__`` only when it is a plain function, and reports any
other as an unsupported method call (a graph break).
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable
from operator import countOf
from typing import Any, Final

import torch

from customop.adapter import (
    MISSING,
    CallShape,
    Guard,
    bind,
    forget,
    generate_call,
    item_types,
    kernel_slot,
    select_kernel,
)
from customop.dispatch import (
    DEFAULT_LOCAL,
    LOCAL_KEYS,
    DispatchKey,
    DispatchKeySet,
    epoch,
    local_state,
)
from customop.exceptions import RegistrationError
from customop.ops import OpOverload, checked_values
from customop.schema import FunctionSchema
from customop.torch._mirror import BACKEND_KEYS, TorchMirror, mutated_positions, torch_uniform

__all__ = ["TorchCall"]

_C: Final[Any] = torch._C
_get_ident: Final = threading.get_ident
_CPU_KEYS: Final = DispatchKeySet(DispatchKey.CPU)
_TENSOR: Final = torch.Tensor
#: Bits of the autograd keys (what customop excludes for torch's autograd guard).
_AUTOGRAD_BITS: Final = DispatchKeySet(*(key for key in DispatchKey if key.is_autograd)).bits
_ALL_BITS: Final = DEFAULT_LOCAL.kept
#: The functionality key torch's ``_AutoDispatchBelowAutograd`` excludes.
_TORCH_AUTOGRAD: Final = torch._C.DispatchKey.AutogradFunctionality


def _below_torch_autograd() -> bool:
    """Whether customop's only local change is torch's autograd guard, mirrored.

    A kernel written for torch's autograd key (an ``autograd.Function``) runs
    with customop's autograd keys excluded (`Library.impl` adapts it), and its
    ``forward`` calls the op again inside ``torch._C._AutoDispatchBelowAutograd``.
    That call belongs to torch's dispatcher, which applies the guard itself, so
    torch's modes (opcheck's SchemaCheckMode) see it, as they do in torch.
    """
    local = LOCAL_KEYS.get()
    return (
        local.included == 0
        and local.kept == _ALL_BITS & ~_AUTOGRAD_BITS
        and torch._C._dispatch_tls_is_dispatch_key_excluded(_TORCH_AUTOGRAD)
    )


#: Tensor types whose calls dispatch as plain tensors: a Parameter (every module
#: weight) disables __torch_function__, so torch itself treats it as a plain tensor
#: (issue #29). torch's ``nn.Buffer(t)`` makes a plain Tensor (Buffer is a marker
#: class); it is listed for a torch whose Buffer instances are of that class.
_PLAIN: Final = frozenset(
    t for t in (torch.Tensor, torch.nn.Parameter, getattr(torch.nn, "Buffer", None)) if t
)
_EMPTY: Final[list[Any]] = [object()]  # matches no local-keys value: first calls go slow
_KIND: Final = "torch"  # tracebacks show <customop torch ns::op>
_dynamo: Final = torch.compiler.is_dynamo_compiling
_dispatch_modes: Final = _C._len_torch_dispatch_stack
#: Whether torch.func transforms (vmap, grad, ...) run: their wrapper tensors have no
#: storage for a kernel to read, so calls go through torch.ops then (issue #24).
_functorch: Final = _C._are_functorch_transforms_active
_wrapped: Final = _C._functorch.is_functorch_wrapped_tensor
_function_modes: Final = _C._is_torch_function_mode_enabled
_grad_enabled: Final = _C.is_grad_enabled
_bump: Final = _C._increment_version
#: From this many arguments on, the fast path compares one tuple of argument types
#: with the entry's instead of testing each type (measured here: 2 arguments, the
#: separate tests are ~25 ns cheaper; 14 arguments, the tuple is ~55 ns cheaper).
_GROUPED_TYPES: Final = 8


def _any_grad(tensors: Any) -> bool:
    return any(t is not None and t.requires_grad for t in tensors)


def _all_cpu(tensors: Any) -> bool:
    return all(t is None or t.is_cpu for t in tensors)


def _bump_list(tensors: Any) -> None:
    _bump(tuple(t for t in tensors if t is not None))


class TorchCall:
    """The generated torch-aware ``__call__`` of one op, its cache and its slow path."""

    def __init__(self, mirror: TorchMirror) -> None:
        self.mirror = mirror
        self.closed = False
        self.replaced = False
        self.handle = mirror.handle
        self.schema: FunctionSchema = mirror.schema
        #: customop's own call object for the op: errors, checks, non-torch arrays.
        self.plain: OpOverload = bind(self.handle, schema=self.schema)
        code = self.plain.call_code
        self.checks = code.checks if code is not None else ()
        self.api = code.api if code is not None else str(self.schema.name)
        arguments = self.schema.arguments
        self.names = tuple(arg.name for arg in arguments)
        self.npos = sum(1 for arg in arguments if not arg.kwarg_only)
        #: Arguments without a default: only these can be missing (the MISSING default).
        self.required = tuple(i for i, arg in enumerate(arguments) if arg.default is None)
        #: (index, kind) of the tensor arguments: "tensor", "optional" or a list kind.
        self.tensors = tuple(self.schema.tensor_argument_positions)
        self.lists = code.lists if code is not None else ()
        self.fast = code is not None and code.fast and bool(self.tensors)
        #: The cache entry holds the argument types as one tuple (else one slot each).
        self.grouped = len(self.names) >= _GROUPED_TYPES
        positions, names = mutated_positions(self.schema)
        self.mutated = positions + tuple(self.names.index(n) for n in names)
        self.namespace: dict[str, Any] = {
            "__builtins__": builtins,  # Dynamo inlines only functions with real globals
            "_co_cache": _EMPTY,
            "_co_site": self,
            "_co_dynamo": _dynamo,
            "_co_op": mirror.torch_op,  # under Dynamo: the graph's node
            "_co_torch": self.torch,  # in eager: through the gate (see _gate)
            "_co_state": local_state,
            "_co_local": LOCAL_KEYS.get,
            "_co_type": type,
            "_co_tuple": tuple,
            "_co_map": map,
            "_co_count": countOf,
            "_co_len": len,
            "_co_dstack": _dispatch_modes,
            "_co_functorch": _functorch,
            "_co_fmode": _function_modes,
            "_co_htf": _C._has_torch_function_unary,
            "_co_grad": _grad_enabled,
            "_co_bump": _bump,
            "_co_bump_list": _bump_list,
            "_co_any_grad": _any_grad,
            "_co_all_cpu": _all_cpu,
            "_co_plain": _PLAIN,
            "_co_isinstance": isinstance,
            "_co_tensor": _TENSOR,
            "_co_missing": MISSING,
            "_co_default_local": DEFAULT_LOCAL,
        }
        shape = CallShape(
            len(self.names), self.npos, self.lists, self.fast, (), 1, self.grouped, True
        )
        self.kernel_slot = kernel_slot(shape)
        self.function: Callable[..., Any] = generate_call(
            _KIND, self.schema, shape, self._guard(), self.namespace, api=self.api
        )

    # -- the cache (a CacheHolder for customop's epoch clock) --------------------

    @property
    def cache(self) -> list[Any]:
        """The fast path's entry."""
        return self.namespace["_co_cache"]  # type: ignore[no-any-return]

    @cache.setter
    def cache(self, value: list[Any]) -> None:
        self.namespace["_co_cache"] = value

    def clear_cache(self) -> None:
        """Empty the entry (the epoch clock calls this on every registration change)."""
        self.namespace["_co_cache"] = _EMPTY

    def close(self, *, replaced: bool = False) -> None:
        """Make the function safe after the op left torch: never call the old torch op.

        An object that copied the function (a ``@custom_op`` specialized while
        registered) then calls customop's own code through it; ``replaced``: the
        op's definition went (a redefinition), and a call still arriving here
        comes from an object of the old one, which must not run the new one's
        kernels: it raises, as that object does from now on.
        """
        self.replaced = replaced
        self.closed = True
        self.clear_cache()
        self.namespace["_co_op"] = self.plain
        forget(_KIND, str(self.schema.name))

    # -- code ---------------------------------------------------------------------

    def _guard(self) -> Guard:
        """Dynamo's reroute first; then, after a cache hit, what torch must still allow."""
        names, npos = self.names, self.npos
        if self.plain.call_code is None:  # no generated code: *args, **kwargs
            call_args = "*args, **kwargs"
        else:
            call_args = ", ".join([*names[:npos], *(f"{n}={n}" for n in names[npos:])])
        prelude = ("if _co_dynamo():", f"    return _co_op({call_args})")
        miss = self._subclass_handover(call_args)
        if not self.fast:
            return Guard(prelude=prelude, miss=miss)
        bumps = self._bumps()
        run = ("_co_r = {kernel}", *bumps, "return _co_r") if bumps else ("return {kernel}",)
        return Guard(prelude, tuple(self._asks()), run, f"return _co_torch({call_args})", miss)

    def _subclass_handover(self, call_args: str) -> tuple[str, ...]:
        """A call where a Tensor argument is a tensor subclass (one with a
        ``__torch_function__`` or ``__torch_dispatch__`` of its own) and every other
        is a torch tensor goes to torch's op at once, in the generated code: no
        slow-path frame and no customop checks in front of torch's full path, which
        checks it (issue #29). Not for a call that binding must explain (surplus,
        unknown or missing arguments), one under customop's own local keys, or one
        after the op left torch. (A subclass only in a ``Tensor?`` or ``Tensor[]``
        argument reaches the slow path, which hands it to torch one frame later.)"""
        tensors = [self.names[i] for i, kind in self.tensors if kind == "tensor"]
        if self.plain.call_code is None or not tensors:
            return ()
        plain = " and ".join(f"_co_type({name}) in _co_plain" for name in tensors)
        tests = [
            # First what fails fast for the plain tensors that missed the cache.
            f"not ({plain})" if len(tensors) > 1 else f"not {plain}",
            *(f"_co_isinstance({name}, _co_tensor)" for name in tensors),  # not MISSING
            "not _co_extra",
            "not _co_unknown",
            *(
                f"{self.names[i]} is not _co_missing"
                for i in self.required
                if self.names[i] not in tensors
            ),
            "_co_local() is _co_default_local",
            "not _co_site.closed",
        ]
        return (f"if {' and '.join(tests)}:", f"    return _co_torch({call_args})")

    def _asks(self) -> list[str]:
        """What each call must still ask torch once the cache entry matched (its types
        prove customop's checks passed and every tensor dispatches as a plain one)."""
        names = self.names
        grads, cpus, direct = [], [], []
        for index, kind in self.tensors:
            name = names[index]
            if kind == "tensor":
                direct.append(name)
                grads.append(f"{name}.requires_grad")
                cpus.append(f"{name}.is_cpu")
            elif kind == "optional":
                direct.append(name)
                grads.append(f"({name} is not None and {name}.requires_grad)")
                cpus.append(f"({name} is None or {name}.is_cpu)")
            else:
                grads.append(f"_co_any_grad({name})")
                cpus.append(f"_co_all_cpu({name})")
        # torch function modes: has_torch_function_unary of one argument (any but an
        # object with a __torch_function__ of its own: the entry's types are plain
        # tensors, None or Python scalars) is True exactly while a mode is active,
        # and costs less than asking for the mode state (no torch error handler).
        # With list arguments only, ask directly.
        asks = [f"not _co_htf({direct[0]})" if direct else "not _co_fmode()"]
        asks.append("not _co_dstack()")
        asks.append("not _co_functorch()")
        asks.append(f"(not ({' or '.join(grads)}) or not _co_grad())")
        # The kernel of a cached entry is the cpu one; it serves every device when
        # customop's table has one kernel for all backends (the entry's `uniform`).
        asks.append(f"(_co_c[{self.kernel_slot + 1}] or ({' and '.join(cpus)}))")
        return asks

    def _bumps(self) -> list[str]:
        lines = []
        for index in self.mutated:
            name = self.names[index]
            kind = dict(self.tensors).get(index, "tensor")
            if kind == "tensor":
                lines.append(f"_co_bump(({name},))")
            elif kind == "optional":
                lines.append(f"if {name} is not None: _co_bump(({name},))")
            else:
                lines.append(f"_co_bump_list({name})")
        return lines

    # -- the slow path --------------------------------------------------------------

    def slow(self, values: tuple[Any, ...], extra: tuple[Any, ...], unknown: dict[str, Any]) -> Any:
        """A call the fast path did not take: customop's, the kernel's, or torch's."""
        if self.closed or extra or unknown or any(values[i] is MISSING for i in self.required):
            return self._customop(values, extra, unknown)
        if LOCAL_KEYS.get() is not DEFAULT_LOCAL and not _below_torch_autograd():
            return self._customop(values, extra, unknown)  # customop's modes and tracing
        tensors = self._tensors(values)
        if not any(isinstance(t, _TENSOR) for t in tensors):
            return self._customop(values, extra, unknown)
        exact = all(type(t) in _PLAIN for t in tensors)
        if not exact and all(isinstance(t, _TENSOR) for t in tensors):
            args, kwargs = self._split(values)
            return self.torch(*args, **kwargs)  # subclasses: torch checks them
        values = checked_values(self.schema, values, self.checks, self.api)
        args, kwargs = self._split(values)
        if not exact:
            return self.torch(*args, **kwargs)
        token = epoch.token
        cpu_kernel, uniform = self._cpu_kernel()
        if self.fast and self.plain.is_current:
            # Types checked, tensors exactly torch.Tensor: later calls like this one skip
            # this function, to the kernel or to torch, as the entry's questions say.
            items = [item_types(values[i]) for i in self.lists]
            types = [tuple(map(type, values))] if self.grouped else list(map(type, values))
            entry = [LOCAL_KEYS.get(), *types, cpu_kernel, uniform, *items]
            epoch.fill(token, self, entry)
        if not self._eager_ok(tensors):
            return self.torch(*args, **kwargs)
        kernel = cpu_kernel if uniform or all(t.is_cpu for t in tensors) else self._kernel(values)
        result = kernel(*args, **kwargs)
        for index in self.mutated:
            value = values[index]
            if value is not None:
                _bump_list(value) if isinstance(value, list | tuple) else _bump((value,))
        return result

    def torch(self, *args: Any, **kwargs: Any) -> Any:
        """Hand a call to torch's op through the mirror's gate: the op's torch
        registration neither goes nor changes while the call is inside it."""
        # Gate.enter and Gate.leave, inlined: this is every call's way into torch.
        mirror = self.mirror
        gate = mirror.gate
        me = _get_ident()
        gate.inside.append(me)
        if gate.draining:
            gate.wait_to_enter(me)
        try:
            op = mirror.torch_entry
            if op is None:  # the op left torch as this call started
                self._check_generation()
                return self.plain(*args, **kwargs)
            return op(*args, **kwargs)
        finally:
            gate.inside.remove(me)
            if gate.draining or gate.pending:
                gate.after_leave()

    def generic(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The slow path of ops whose arguments cannot be Python parameters."""
        if self.closed:
            return self.plain(*args, **kwargs)
        flat = [*args, *kwargs.values()]
        found = [v for v in flat if isinstance(v, _TENSOR)]
        found += [
            t for v in flat if isinstance(v, list | tuple) for t in v if isinstance(t, _TENSOR)
        ]
        if found:
            return self.torch(*args, **kwargs)
        return self.plain(*args, **kwargs)

    def _check_generation(self) -> None:
        if self.replaced:
            raise RegistrationError(
                f"{self.api}: this call began as the op's definition was replaced (or "
                "removed). Running now would use kernels of a definition it was not made "
                "for. Call the op again through its new definition."
            )

    def _customop(
        self, values: tuple[Any, ...], extra: tuple[Any, ...], unknown: dict[str, Any]
    ) -> Any:
        self._check_generation()
        positional = list(values[: self.npos])
        keywords = {}
        missing = [i for i, v in enumerate(positional) if v is MISSING]
        if missing:
            cut = missing[0]
            keywords = {
                self.names[i]: v for i, v in enumerate(positional) if i > cut and v is not MISSING
            }
            positional = positional[:cut]
        for name, value in zip(self.names[self.npos :], values[self.npos :], strict=True):
            if value is not MISSING:
                keywords[name] = value
        return self.plain(*positional, *extra, **keywords, **unknown)

    def _tensors(self, values: tuple[Any, ...]) -> list[Any]:
        found: list[Any] = []
        for index, kind in self.tensors:
            value = values[index]
            if kind in ("tensor", "optional"):
                found.append(value)
            elif value is not None:
                found.extend(value)
        return [t for t in found if t is not None]

    @staticmethod
    def _eager_ok(tensors: list[Any]) -> bool:
        if not all(type(t) in _PLAIN for t in tensors):
            return False
        if _dispatch_modes() or _function_modes() or _functorch():
            return False
        if any(_wrapped(t) for t in tensors):  # a wrapper that left its transform
            return False
        return not (_grad_enabled() and any(t.requires_grad for t in tensors))

    def _kernel(self, values: tuple[Any, ...]) -> Callable[..., Any]:
        """customop's kernel for these tensors' backend (not its autograd keys)."""
        args, kwargs = self._split(values)
        keys = self.handle.dispatch_keyset(*args, **kwargs)
        return select_kernel(self.handle, keys.bits & BACKEND_KEYS.bits)

    def _cpu_kernel(self) -> tuple[Callable[..., Any], bool]:
        """customop's cpu kernel, and whether every backend has it (a
        CompositeExplicitAutograd body), so that it serves every device."""
        uniform = torch_uniform(self.handle)
        if uniform is not None:
            return uniform, True
        return select_kernel(self.handle, _CPU_KEYS.bits), False

    def _split(self, values: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        npos = self.npos
        if npos == len(values):
            return values, {}
        return values[:npos], self._keywords(values)

    def _keywords(self, values: tuple[Any, ...]) -> dict[str, Any]:
        npos = self.npos
        return {
            n: v for n, v in zip(self.names[npos:], values[npos:], strict=True) if v is not MISSING
        }

"""Error and warning texts of the dispatcher, in one place.

Each message has four parts: ``<api>: <what is wrong>. <why it matters>. <how to fix>``.
Builders return the exception; callers raise it, so tracebacks end at the caller.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from customop.dispatch._kernel import DEFAULT_SOURCE, KernelRecord
from customop.dispatch._keys import DispatchKey, DispatchKeySet
from customop.exceptions import MissingKernelError, RegistrationError, UnknownOperatorError
from customop.schema import close_matches

if TYPE_CHECKING:
    from customop.dispatch._dispatcher import Dispatcher
    from customop.dispatch._operator import OperatorHandle

__all__ = [
    "duplicate_def_error",
    "fallback_conflict_error",
    "library_conflict_error",
    "missing_kernel_error",
    "no_schema_error",
    "override_warning",
    "unknown_operator_error",
]


def no_schema_error(api: str, op: str) -> UnknownOperatorError:
    return UnknownOperatorError(
        f"{api}: operator {op!r} has no schema (it was never defined, or its def was "
        "removed). An operator needs its schema to bind and dispatch its arguments. "
        f"Define it first, e.g. dispatcher.register_def('{op}(Tensor x) -> Tensor').",
        op=op,
    )


def unknown_operator_error(
    api: str, op: str, known: Iterable[str], dangling: Iterable[KernelRecord]
) -> UnknownOperatorError:
    impls = [f"{record.key.name} at {record.where}" for record in dangling]
    if impls:
        what = f"operator {op!r} has impls ({'; '.join(impls)}) but no def"
    else:
        what = f"operator {op!r} is not defined"
    close = close_matches(op, list(known), n=3)
    hint = f" Did you mean {', '.join(repr(name) for name in close)}?" if close else ""
    return UnknownOperatorError(
        f"{api}: {what}. Only operators with a registered def have a schema. "
        f"Register the def with register_def (or Library.define), or check the name.{hint}",
        op=op,
    )


def duplicate_def_error(op: str, first: str, second: str) -> RegistrationError:
    return RegistrationError(
        f"register_def: operator {op!r} is already defined, at {first}; this second def "
        f"is at {second}. An operator name and overload has exactly one schema, so calls "
        "know how to bind arguments. Remove the first def's handle, or give this one "
        f"another overload name (e.g. '{op}.v2')."
    )


def library_conflict_error(namespace: str, first: str, second: str) -> RegistrationError:
    return RegistrationError(
        f"register_library: namespace {namespace!r} already has a DEF library, at {first}; "
        f"a second DEF library is at {second}. Only one DEF library may own a namespace, so "
        "that all of its definitions live in one place. Use kind='FRAGMENT' to add "
        "definitions to an existing namespace (or 'IMPL' to add kernels only)."
    )


def fallback_conflict_error(key: str, first: str, second: str) -> RegistrationError:
    fix = "Remove the first fallback's handle before registering another"
    if first == DEFAULT_SOURCE:
        fix += (
            " (it is the dispatcher's default: remove it via Dispatcher.default_registrations, "
            "or create the dispatcher with Dispatcher(autograd_fallthrough=False))"
        )
    return RegistrationError(
        f"register_fallback: dispatch key {key!r} already has a fallback, at {first}; a "
        f"second fallback is at {second}. A key has at most one fallback, because it serves "
        f"every operator without a kernel for that key. {fix}."
    )


def override_warning(op: str, key: str, old: KernelRecord, new_label: str) -> str:
    return (
        f"register_impl: operator {op!r} already has a kernel for dispatch key {key!r} "
        f"({old.label}); the new kernel {new_label} overrides it. Calls run the newest "
        "kernel, and removing its handle brings the previous one back. Remove the old "
        "kernel's handle first to replace it without this warning."
    )


# Backend keys -> the device type front-ends such as register_kernel take.
_DEVICES = {"CPU": "cpu", "CUDA": "cuda", "Meta": "meta"}


def missing_kernel_error(
    dispatcher: Dispatcher, op: OperatorHandle, keyset: DispatchKeySet, call_keys: DispatchKeySet
) -> MissingKernelError:
    name = str(op.name)
    served = [dispatcher.key_name(k) for k, entry in dispatcher._served_keys(op)]
    having = f"kernels for {', '.join(served)}" if served else "no kernels at all"
    table = dispatcher.dump_table(op, kernels_only=True)
    table_text = f"\nKeys with a kernel in the computed table:\n{table}" if table else ""
    if not keyset:
        keys = ", ".join(dispatcher.key_name(k) for k in call_keys) or "none"
        return MissingKernelError(
            f"{name}: no dispatch key is left for this call (its keys: {keys}). Every key "
            "of the call falls through or is excluded, so no kernel can run. Register a "
            "kernel (not a fallthrough) for one of those keys, or leave the exclude_keys "
            f"block. The op has {having}.{table_text}",
            op=name,
        )
    key = keyset.highest()
    key_name = dispatcher.key_name(key)
    if key is DispatchKey.Fake:
        text = (
            f"{name}: no fake kernel (dispatch key 'Fake'). Fake tensors carry no data, so "
            "the op needs a kernel that computes only output shapes, dtypes and devices. "
            f"Register one with customop.register_fake('{name}', fn) or "
            f"register_impl('{name}', 'Fake', fn); a Meta or CompositeImplicitAutograd "
            f"kernel also serves Fake. The op has {having}."
        )
    else:
        hint = op._entry.kernel_hint
        device = _DEVICES.get(key_name)
        register = (
            hint.format(device=device)
            if hint and device
            else f"register_impl('{name}', '{key_name}', fn)"
        )
        # torch's phrase for a custom_op, where the key is a device's.
        torch_says = f" ({name} does not have a kernel registered for {device})" if device else ""
        text = (
            f"{name}: no kernel for dispatch key {key_name!r}{torch_says}. The op has {having}, "
            f"and no fallback serves {key_name}. Register one with {register}, or a "
            "CompositeExplicitAutograd kernel that works on every backend."
        )
    return MissingKernelError(text + table_text, op=name, key=key_name)

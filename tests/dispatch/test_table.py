"""Table precedence, table-driven: every combination of CPU, Meta, CompositeExplicitAutograd,
CompositeImplicitAutograd and Autograd kernels, with and without a CPU fallback.

Expectations come from `tests.dispatch.reference` (PyTorch's stated rules) and from
hand-written rows; the calls check that the table is also what runs.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from customop.dispatch import Dispatcher, DispatchKey, DispatchKeySet, fallthrough
from customop.exceptions import MissingKernelError
from tests.dispatch import reference
from tests.dispatch.doubles import FakeArray, MetaArray, fake_keys

ALIAS_AND_BACKEND = (
    "CPU",
    "Meta",
    "CompositeExplicitAutograd",
    "CompositeImplicitAutograd",
    "Autograd",
)
CHECKED_KEYS = ("CPU", "AutogradCPU", "Fake", "Meta", "AutogradMeta")
COMBINATIONS = [
    (frozenset(keys), cpu_fallback)
    for size in range(len(ALIAS_AND_BACKEND) + 1)
    for keys in itertools.combinations(ALIAS_AND_BACKEND, size)
    for cpu_fallback in (False, True)
]


def _case_id(case: tuple[frozenset[str], bool]) -> str:
    keys, cpu_fallback = case
    short = {"CompositeExplicitAutograd": "CEA", "CompositeImplicitAutograd": "CIA"}
    names = "+".join(short.get(k, k) for k in ALIAS_AND_BACKEND if k in keys) or "none"
    return names + ("+cpu_fallback" if cpu_fallback else "")


def _named(name: str, *, boxed: bool = False) -> Callable[..., Any]:
    """A kernel that returns its own name, so a call shows which kernel ran."""

    def plain(x: Any) -> str:
        return name

    def boxed_kernel(op: Any, keyset: DispatchKeySet, x: Any) -> str:
        return name

    kernel = boxed_kernel if boxed else plain
    kernel.__name__ = name
    return kernel


def _setup(keys: frozenset[str], cpu_fallback: bool, reverse: bool = False) -> Dispatcher:
    """Register ``keys`` in enum order, or in reverse with the fallback (and def) first.

    Tables are updated incrementally, so the order of registrations must not matter.
    """
    d = Dispatcher()
    d.register_array_type(MetaArray, DispatchKey.Meta)
    d.register_array_type(FakeArray, fake_keys)
    ordered = [key for key in ALIAS_AND_BACKEND if key in keys]
    if reverse and cpu_fallback:
        d.register_fallback("CPU", _named("fb_CPU", boxed=True))
    if reverse:
        d.register_def("t::op(Tensor x) -> Tensor")
    for key in reversed(ordered) if reverse else ordered:
        d.register_impl("t::op", key, _named(f"k_{key}"))
    if not reverse:
        d.register_def("t::op(Tensor x) -> Tensor")
    if not reverse and cpu_fallback:
        d.register_fallback("CPU", _named("fb_CPU", boxed=True))
    return d


def _expected(keys: frozenset[str], cpu_fallback: bool, key: str) -> tuple[str | None, str]:
    kernels = {k: [f"k_{k}"] for k in keys}
    fallbacks = {k: "fallthrough" for k in reference.AUTOGRAD_KEYS}
    if cpu_fallback:
        fallbacks["CPU"] = "fb_CPU"
    return reference.choose(kernels, fallbacks, key)


@pytest.mark.parametrize("case", COMBINATIONS, ids=[_case_id(c) for c in COMBINATIONS])
def test_table_entries_follow_pytorch_precedence(case: tuple[frozenset[str], bool]) -> None:
    keys, cpu_fallback = case
    d = _setup(keys, cpu_fallback)
    for key in CHECKED_KEYS:
        entry = d.table_entry("t::op", key)
        assert (entry.kernel, entry.reason) == _expected(keys, cpu_fallback, key), key


def _run(d: Dispatcher, x: object) -> str | None:
    op = d.find_schema_or_throw("t::op")
    try:
        return str(op(x))
    except MissingKernelError:
        return None


def _first_runnable(keys: frozenset[str], cpu_fallback: bool, order: tuple[str, ...]) -> str | None:
    """The kernel a call runs: the highest key's entry, skipping fallthroughs."""
    for key in order:
        name, reason = _expected(keys, cpu_fallback, key)
        if reason != "fallthrough":
            return name
    return None


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("case", COMBINATIONS, ids=[_case_id(c) for c in COMBINATIONS])
def test_calls_run_the_table_entry_of_the_highest_key(
    case: tuple[frozenset[str], bool], reverse: bool
) -> None:
    keys, cpu_fallback = case
    d = _setup(keys, cpu_fallback, reverse)
    cpu_order = ("AutogradCPU", "CPU")
    assert _run(d, np.ones(2)) == _first_runnable(keys, cpu_fallback, cpu_order)
    meta_order = ("AutogradMeta", "Meta")
    assert _run(d, MetaArray()) == _first_runnable(keys, cpu_fallback, meta_order)
    fake_order = ("AutogradCPU", "Fake")
    assert _run(d, FakeArray()) == _first_runnable(keys, cpu_fallback, fake_order)


# Hand-written rows, straight from the sentences of PyTorch's note.
CEA, CIA, AG = "CompositeExplicitAutograd", "CompositeImplicitAutograd", "Autograd"
SPOT_ROWS = [
    pytest.param({"CPU", CIA}, "AutogradCPU", "fallthrough", id="cia-not-for-autograd-if-backend"),
    pytest.param({CIA}, "AutogradCPU", "math kernel", id="cia-serves-autograd"),
    pytest.param({CEA, CIA}, "AutogradCPU", "fallthrough", id="cea-blocks-cia-for-autograd"),
    pytest.param({CEA, CIA}, "CPU", "default backend kernel", id="cea-beats-cia"),
    pytest.param({CIA, AG}, "AutogradCPU", "math kernel", id="cia-beats-autograd"),
    pytest.param({"CPU", CIA, AG}, "AutogradCPU", "autograd kernel", id="autograd-if-cia-blocked"),
    pytest.param({CEA}, "Fake", "missing", id="cea-never-serves-fake"),
    pytest.param({"Meta", CIA}, "Fake", "meta kernel", id="meta-beats-cia-for-fake"),
    pytest.param({CIA}, "Fake", "math kernel", id="cia-serves-fake"),
    pytest.param({CEA}, "Meta", "default backend kernel", id="cea-serves-meta"),
]


@pytest.mark.parametrize(("keys", "key", "reason"), SPOT_ROWS)
def test_spot_rows(keys: set[str], key: str, reason: str) -> None:
    d = _setup(frozenset(keys), cpu_fallback=False)
    assert d.table_entry("t::op", key).reason == reason


FALLTHROUGH_ROWS = [
    pytest.param("kernel-on-cpu", "CPU", "fallthrough", id="fallthrough-kernel"),
    pytest.param("fallback-on-cpu", "CPU", "fallthrough", id="fallthrough-fallback"),
    pytest.param("autograd-alias", "AutogradCPU", "fallthrough", id="fallthrough-alias-kernel"),
    pytest.param("no-default", "AutogradCPU", "missing", id="no-autograd-fallthrough"),
]


def _fallthrough_setup(variant: str) -> Dispatcher:
    d = Dispatcher(autograd_fallthrough=variant not in ("autograd-alias", "no-default"))
    d.register_def("t::op(Tensor x) -> Tensor")
    if variant == "kernel-on-cpu":
        d.register_impl("t::op", "CPU", fallthrough)
        d.register_impl("t::op", "CompositeExplicitAutograd", _named("k_CEA"))
    elif variant == "fallback-on-cpu":
        d.register_fallback("CPU", fallthrough)
    elif variant == "autograd-alias":
        d.register_impl("t::op", "Autograd", fallthrough)
        d.register_impl("t::op", "CPU", _named("k_CPU"))
    else:
        d.register_impl("t::op", "CPU", _named("k_CPU"))
    return d


@pytest.mark.parametrize(("variant", "key", "reason"), FALLTHROUGH_ROWS)
def test_fallthrough_rows(variant: str, key: str, reason: str) -> None:
    d = _fallthrough_setup(variant)
    assert d.table_entry("t::op", key).reason == reason


def test_fallthrough_removes_its_key_from_the_mask() -> None:
    d = _fallthrough_setup("autograd-alias")
    op = d.find_schema_or_throw("t::op")
    assert DispatchKey.AutogradCPU not in op.dispatch_keyset(np.ones(2))
    assert op(np.ones(2)) == "k_CPU"


def test_without_autograd_fallthrough_a_cpu_call_needs_an_autograd_kernel() -> None:
    d = _fallthrough_setup("no-default")
    op = d.find_schema_or_throw("t::op")
    with pytest.raises(MissingKernelError) as caught:
        op(np.ones(2))
    assert caught.value.key == "AutogradCPU"

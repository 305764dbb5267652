"""The registration lifecycle as a hypothesis state machine, against a plain reference model.

Rules mix def / impl / fallback / listener registrations and removals (also
repeated removals) in any order. After every step the dispatcher must agree
with the model on: the operators that exist, which have a schema, the dangling
impls, the kernel and reason of every checked table entry (per the reference
rules), what a CPU call runs, and the events each listener heard.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    multiple,
    precondition,
    rule,
)

from customop.dispatch import (
    Dispatcher,
    DispatchKey,
    DispatchKeySet,
    OperatorHandle,
    RegistrationHandle,
    fallthrough,
)
from customop.exceptions import KernelOverrideWarning, MissingKernelError, RegistrationError
from tests.dispatch import reference

OPS = ("t::a", "t::b")
IMPL_KEYS = (
    "CPU", "CUDA", "Meta", "Fake", "AutogradCPU",
    "CompositeExplicitAutograd", "CompositeImplicitAutograd", "Autograd",
)  # fmt: skip
FALLBACK_KEYS = ("CPU", "CUDA", "Fake", "Tracer")
CHECKED_KEYS = (
    "CPU",
    "CUDA",
    "Meta",
    "Fake",
    "AutogradCPU",
    "AutogradCUDA",
    "AutogradMeta",
    "Tracer",
)


def _kernel(name: str) -> Any:
    def kernel(*args: Any, **kwargs: Any) -> str:
        return name

    kernel.__name__ = name
    return kernel


def _fallback(name: str) -> Any:
    def kernel(op: OperatorHandle, keyset: Any, *args: Any, **kwargs: Any) -> str:
        return name

    kernel.__name__ = name
    return kernel


def _shown(kernels: reference.Kernels) -> reference.Kernels:
    """The model's stacks with every fallthrough named as the dispatcher names it."""
    return {
        key: ["fallthrough" if name.startswith("fallthrough:") else name for name in stack]
        for key, stack in kernels.items()
    }


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_operator_registered(self, op: OperatorHandle) -> None:
        self.events.append(("registered", str(op.name)))

    def on_operator_deregistered(self, op: OperatorHandle) -> None:
        self.events.append(("deregistered", str(op.name)))


@dataclass
class Action:
    """What a handle undoes, in model terms."""

    kind: str
    handle: RegistrationHandle
    op: str = ""
    key: str = ""
    name: str = ""
    listener: int = -1
    kernels: list[tuple[str, str]] = field(default_factory=list)  # a def's (key, name)s


@dataclass
class Model:
    defined: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(OPS, False))
    kernels: dict[str, reference.Kernels] = field(default_factory=lambda: {op: {} for op in OPS})
    fallbacks: reference.Fallbacks = field(
        default_factory=lambda: dict.fromkeys(reference.AUTOGRAD_KEYS, "fallthrough")
    )
    events: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    live_listeners: set[int] = field(default_factory=set)

    def tell(self, kind: str, op: str) -> None:
        for listener in self.live_listeners:
            self.events[listener].append((kind, op))

    def exists(self, op: str) -> bool:
        return self.defined[op] or any(self.kernels[op].values())


class DispatcherMachine(RuleBasedStateMachine):
    handles = Bundle("handles")

    def __init__(self) -> None:
        super().__init__()
        self.d = Dispatcher()
        self.model = Model()
        self.recorders: dict[int, Recorder] = {}
        self.removed: list[Action] = []
        self.counter = 0

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    @rule(
        target=handles,
        op=st.sampled_from(OPS),
        keys=st.lists(st.sampled_from(IMPL_KEYS), unique=True, max_size=2),
    )
    def define(self, op: str, keys: list[str]) -> Any:
        # With keys: the def brings its first kernels in the same write.
        schema = f"{op}(Tensor x) -> Tensor"
        kernels = {key: _kernel(self._name("d")) for key in keys}
        if self.model.defined[op]:
            with pytest.raises(RegistrationError):
                self.d.register_def(schema, kernels=kernels)
            return multiple()
        overridden = [key for key in keys if self.model.kernels[op].get(key)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            handle = self.d.register_def(schema, kernels=kernels)
        assert [w.category for w in caught] == [KernelOverrideWarning] * len(overridden)
        self.model.defined[op] = True
        added = [(key, kernel.__name__) for key, kernel in kernels.items()]
        for key, name in added:
            self.model.kernels[op].setdefault(key, []).insert(0, name)
        self.model.tell("registered", op)
        return Action("def", handle, op=op, kernels=added)

    @rule(
        target=handles,
        op=st.sampled_from(OPS),
        key=st.sampled_from(IMPL_KEYS),
        through=st.booleans(),
    )
    def impl(self, op: str, key: str, through: bool) -> Action:
        # Model names are unique, so removing one fallthrough removes that one.
        name = self._name("fallthrough:" if through else "k")
        stack = self.model.kernels[op].setdefault(key, [])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            handle = self.d.register_impl(op, key, fallthrough if through else _kernel(name))
        assert [w.category for w in caught] == ([KernelOverrideWarning] if stack else [])
        stack.insert(0, name)
        return Action("impl", handle, op=op, key=key, name=name)

    @rule(target=handles, key=st.sampled_from(FALLBACK_KEYS))
    def fallback(self, key: str) -> Any:
        name = self._name("fb")
        if key in self.model.fallbacks:
            with pytest.raises(RegistrationError):
                self.d.register_fallback(key, _fallback(name))
            return multiple()
        handle = self.d.register_fallback(key, _fallback(name))
        self.model.fallbacks[key] = name
        return Action("fallback", handle, key=key)

    @rule(target=handles)
    def listen(self) -> Action:
        listener = len(self.recorders)
        recorder = self.recorders[listener] = Recorder()
        handle = self.d.add_listener(recorder)
        replay = [("registered", op) for op in OPS if self.model.defined[op]]
        assert sorted(recorder.events) == replay  # replay order is the dispatcher's own
        self.model.events[listener] = list(recorder.events)
        self.model.live_listeners.add(listener)
        return Action("listener", handle, listener=listener)

    @rule(action=consumes(handles))
    def remove(self, action: Action) -> None:
        action.handle.remove()
        model = self.model
        if action.kind == "def":
            model.tell("deregistered", action.op)
            model.defined[action.op] = False
            for key, name in action.kernels:
                stack = model.kernels[action.op][key]
                stack.remove(name)
                if not stack:
                    del model.kernels[action.op][key]
        elif action.kind == "impl":
            stack = model.kernels[action.op][action.key]
            stack.remove(action.name)
            if not stack:
                del model.kernels[action.op][action.key]
        elif action.kind == "fallback":
            del model.fallbacks[action.key]
        else:
            model.live_listeners.discard(action.listener)
        self.removed.append(action)

    @precondition(lambda self: bool(self.removed))
    @rule(data=st.data())
    def remove_again(self, data: st.DataObject) -> None:
        data.draw(st.sampled_from(self.removed)).handle.remove()  # must change nothing

    @invariant()
    def operators_and_dangling_impls_match(self) -> None:
        snap = self.d.snapshot()
        assert {info.name for info in snap.operators} == {op for op in OPS if self.model.exists(op)}
        for op in OPS:
            assert (self.d.find_op(op) is not None) == self.model.defined[op]
        dangling = {
            (op, key, name)
            for op in OPS
            if not self.model.defined[op]
            for key, stack in _shown(self.model.kernels[op]).items()
            for name in stack
        }
        assert {(k.op, k.key, k.kernel) for k in snap.dangling_impls} == dangling

    @invariant()
    def tables_match_the_reference(self) -> None:
        for op in OPS:
            if not self.model.defined[op]:
                continue
            kernels = _shown(self.model.kernels[op])
            for key in CHECKED_KEYS:
                entry = self.d.table_entry(op, key)
                expected = reference.choose(kernels, self.model.fallbacks, key)
                assert (entry.kernel, entry.reason) == expected
                # The published table (what calls use) agrees with the computed one.
                runs = None if expected[1] in ("fallthrough", "missing") else expected[0]
                assert self._call(op, DispatchKeySet(DispatchKey[key])) == runs
            assert self._call(op) == self._expected_call(kernels)

    def _call(self, op: str, keys: DispatchKeySet | None = None) -> str | None:
        handle = self.d.find_schema_or_throw(op)
        try:
            if keys is None:
                return str(handle(np.ones(1)))
            return str(handle.redispatch(keys, np.ones(1)))
        except MissingKernelError:
            return None

    def _expected_call(self, kernels: reference.Kernels) -> str | None:
        for key in ("AutogradCPU", "CPU"):
            name, reason = reference.choose(kernels, self.model.fallbacks, key)
            if reason != "fallthrough":
                return name
        return None

    @invariant()
    def listeners_heard_the_model_events(self) -> None:
        for listener, recorder in self.recorders.items():
            assert recorder.events == self.model.events[listener]


DispatcherMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_dispatcher_lifecycle = DispatcherMachine.TestCase

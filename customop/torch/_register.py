"""``customop.torch.register``: which ops are mirrored in torch, kept in step with customop.

One `_Registry` per `Dispatcher` listens to it (defs coming and going, and
kernel changes through ``on_operator_changed``) and owns a `_Mirrored` per
op it mirrors: the torch side (`TorchMirror`), the torch-aware call code
(`TorchCall`), and the customop call objects it gave that code to. What is
wanted is counted per op name, per ``ns::name`` (all its overloads) and per
namespace, so registering twice registers once, and an op leaves torch when
the last handle that wanted it is removed (or when its customop def goes).
"""

from __future__ import annotations

import warnings
from typing import Any
from weakref import WeakKeyDictionary

from customop.adapter import (
    OperatorListener,
    RegistrationHandle,
    call_objects,
    install_call,
    installed_call,
    on_call_object,
    operator_handle,
)
from customop.dispatch import Dispatcher, OperatorHandle, caller_source, run_or_defer
from customop.dispatch import dispatcher as default_dispatcher
from customop.exceptions import RegistrationError, UnknownOperatorError
from customop.ops import OpOverload, OpOverloadPacket
from customop.ops import ops as default_ops
from customop.schema import OperatorName, parse_operator_name
from customop.torch._callcode import TorchCall
from customop.torch._mirror import TorchMirror

__all__ = ["register"]


class _Mirrored:
    """One op in torch: the mirror, its call code, and the objects that call through it."""

    def __init__(self, handle: OperatorHandle) -> None:
        self.mirror = TorchMirror(handle)
        try:
            self.call = TorchCall(self.mirror)
        except BaseException:
            self.mirror.close()
            raise
        # id(obj) -> handle: the objects live as long as the op's definition or packet.
        self._installed: dict[int, RegistrationHandle] = {}
        self._shortcuts: list[tuple[dict[str, Any], str, Any]] = []

    def install(self, obj: Any) -> None:
        """Give ``obj`` (a CustomOpDef, OpOverload or packet) the torch-aware ``__call__``."""
        if installed_call(obj) is not self.call:
            self._installed[id(obj)] = install_call(obj, self.call.function, self.call)

    def uninstall(self, obj: Any) -> None:
        """Give ``obj`` its own call back (a packet whose name got a second overload)."""
        handle = self._installed.pop(id(obj), None)
        if handle is not None:
            handle.remove()

    def install_all(self, handle: OperatorHandle) -> None:
        """Every call object of the op now (a ``@custom_op`` records its definition
        after its def, so a namespace registered first meets the object later)."""
        for obj in call_objects(handle):
            self.install(obj)

    def shortcut(self, holder: Any, name: str, value: Any) -> None:
        """Put ``value`` in ``holder``'s instance dict, so Dynamo needs no ``__getattr__``."""
        attrs = vars(holder)
        if name not in attrs:
            attrs[name] = value
            self._shortcuts.append((attrs, name, value))

    def close_objects(self, *, replaced: bool = False) -> None:
        """Give every object its own call back (at once, under the registration lock);
        ``replaced``: the op's definition went, so late calls through its code raise."""
        RegistrationHandle.group(list(self._installed.values())).remove()
        self._installed.clear()
        for attrs, name, value in reversed(self._shortcuts):
            if attrs.get(name) is value:
                del attrs[name]
        self._shortcuts.clear()
        self.call.close(replaced=replaced)

    def close(self, *, replaced: bool = False) -> None:
        """Give every object its own call back, then leave torch."""
        self.close_objects(replaced=replaced)
        self.mirror.close()


class _Registry(OperatorListener):
    """What one dispatcher mirrors in torch; an `OperatorListener` of that dispatcher."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.wanted: dict[str, int] = {}  # "ns::name.overload", "ns::name" or "ns" -> count
        self.live: dict[OperatorName, _Mirrored] = {}
        #: Ops whose torch registration waits for calls to leave it (see _gate): their
        #: name cannot be defined in torch again until then.
        self.leaving: set[OperatorName] = set()
        self._handles = [
            dispatcher.add_listener(self),
            on_call_object(dispatcher, self.adopt),
        ]

    # -- what is wanted -------------------------------------------------------------

    def wants(self, name: OperatorName) -> bool:
        keys = (str(name), f"{name.namespace}::{name.name}", name.namespace)
        return any(key in self.wanted for key in keys)

    def want(self, key: str) -> None:
        self.wanted[key] = self.wanted.get(key, 0) + 1

    def unwant(self, key: str) -> None:
        count = self.wanted.get(key, 0) - 1
        if count > 0:
            self.wanted[key] = count
            return
        self.wanted.pop(key, None)
        for name in [n for n in self.live if not self.wants(n)]:
            self._leave(name)

    # -- listener -------------------------------------------------------------------

    def on_operator_registered(self, op: OperatorHandle) -> None:
        """A new def: mirror it when a registration wants it (a namespace's new op)."""
        if self.wants(op.name) and op.name not in self.live:
            try:
                self.mirror(op)
            except RegistrationError as error:  # the customop def stands; say why torch has not
                warnings.warn(str(error), RuntimeWarning, stacklevel=2)

    def on_operator_deregistered(self, op: OperatorHandle) -> None:
        """A def removed: the op leaves torch (a later def of the name comes back)."""
        if op.name in self.live:
            self._leave(op.name, replaced=True)

    def on_operator_changed(self, op: OperatorHandle) -> None:
        """A kernel, fake or formula came or went: torch follows."""
        mirrored = self.live.get(op.name)
        if mirrored is not None and op.has_schema:
            mirrored.mirror.sync()
            mirrored.install_all(op)

    def adopt(self, overload: OpOverload) -> None:
        """A new OpOverload of a mirrored op calls through the torch-aware code."""
        mirrored = self.live.get(overload.handle.name)
        if mirrored is not None and overload.schema is mirrored.mirror.schema:
            mirrored.install(overload)

    # -- mirroring ------------------------------------------------------------------

    def _leave(self, name: OperatorName, *, replaced: bool = False) -> None:
        """The op leaves torch: its objects at once; its torch registration once this
        thread leaves the registration lock, after the calls inside it are done.

        NOTE: waiting for those calls under the lock could deadlock: a kernel they
        run may need the lock. The name waits in `leaving` (a redefinition's new
        def is mirrored once the old one is gone from torch).
        """
        mirrored = self.live.pop(name)
        mirrored.close_objects(replaced=replaced)
        self.leaving.add(name)
        run_or_defer(lambda: self._left(name, mirrored))

    def _left(self, name: OperatorName, mirrored: _Mirrored) -> None:
        mirrored.mirror.close()  # waits for calls of customop's objects inside it
        with self.dispatcher.lock:
            self.leaving.discard(name)
            found = self.dispatcher.find_op(str(name))
            back = found is not None and found.has_schema and self.wants(name)
            if back and name not in self.live:
                try:
                    self.mirror(found)  # type: ignore[arg-type]  # found: a handle here
                except RegistrationError as error:
                    warnings.warn(str(error), RuntimeWarning, stacklevel=2)

    def mirror(self, handle: OperatorHandle) -> None:
        if handle.name in self.leaving:
            return  # its old torch definition is not gone yet: `_left` comes back to it
        mirrored = _Mirrored(handle)
        self.live[handle.name] = mirrored
        mirrored.install_all(handle)
        if handle.dispatcher is default_dispatcher:
            _shortcuts(mirrored, handle, self.live)

    def close(self) -> None:
        for name in list(self.live):
            self._leave(name)
        RegistrationHandle.group(self._handles).remove()


def _shortcuts(
    mirrored: _Mirrored, handle: OperatorHandle, live: dict[OperatorName, _Mirrored]
) -> None:
    """``customop.ops.<ns>.<name>`` as plain attributes, the packet calling through torch.

    Dynamo reads instance attributes, but would have to trace ``__getattr__``.
    Only an op that is its name's single overload gets a packet call; a second
    overload gives the packet its own call (which picks the overload) back.
    """
    name = handle.name
    space = getattr(default_ops, name.namespace)
    packet = getattr(space, name.name)
    overload = packet.overload(name.overload or "default")
    mirrored.install(overload)
    mirrored.shortcut(default_ops, name.namespace, space)
    if packet.overloads() == [name.overload or "default"]:
        mirrored.install(packet)
        mirrored.shortcut(space, name.name, packet)
        mirrored.shortcut(packet, name.overload or "default", overload)
        return
    for other, sibling in live.items():
        if other.namespace == name.namespace and other.name == name.name:
            sibling.uninstall(packet)


_registries: WeakKeyDictionary[Dispatcher, _Registry] = WeakKeyDictionary()


def _registry(dispatcher: Dispatcher) -> _Registry:
    found = _registries.get(dispatcher)
    if found is None:
        found = _registries[dispatcher] = _Registry(dispatcher)
    return found


def _target(target: object, dispatcher: Dispatcher | None) -> tuple[Dispatcher, str]:
    """The dispatcher and wanted key (``ns::name.overload``, ``ns::name`` or ``ns``)."""
    api = "customop.torch.register"
    if isinstance(target, str):
        d = default_dispatcher if dispatcher is None else dispatcher
        if "::" not in target:
            if not target.isidentifier():
                raise ValueError(
                    f"{api}: {target[:200]!r} is not a namespace or an op name. A target is "
                    "an op, 'ns::name' or a namespace 'ns'. Pass e.g. 'mylib' or 'mylib::add'."
                )
            return d, target
        name = parse_operator_name(target)
        if not any(
            h.name.namespace == name.namespace and h.name.name == name.name for h in d.defined_ops()
        ):
            raise UnknownOperatorError(
                f"{api}: no operator {target[:200]!r} is defined. Only defined ops can be "
                "defined in torch too. Define it first, or register its namespace to take "
                "ops defined later."
            )
        return d, str(name)
    if isinstance(target, OpOverloadPacket):
        return target.dispatcher, target.name
    try:
        handle = operator_handle(target, default_dispatcher, api)
    except TypeError:
        handle = None
    if isinstance(handle, OperatorHandle):
        return handle.dispatcher, str(handle.name)
    raise TypeError(
        f"{api}: expected a CustomOpDef, an OpOverload, a packet, 'ns::name' or a namespace, "
        f"got {target!r:.200}. These name the ops to define in torch. Pass one of them."
    )


def register(target: object, *, dispatcher: Dispatcher | None = None) -> RegistrationHandle:
    """Define customop ops in ``torch.library``, kernels, fake, formula and tags included.

    Args:
        target: A `CustomOpDef`, an `OpOverload`, an `OpOverloadPacket` (all its
            overloads), ``"ns::name"`` (all overloads) or ``"ns::name.overload"``,
            or a namespace ``"ns"`` (its ops now and those defined later).
        dispatcher: Where names are looked up (default: ``customop.dispatcher``);
            op objects carry their own.

    Returns:
        A handle: removing it removes what it registered in torch. Registering an
        op twice registers it once; it leaves torch with the last handle.

    Raises:
        UnknownOperatorError: ``"ns::name"`` names no defined op.
        RegistrationError: torch refused the definition (the name is defined in
            torch by other code); nothing is registered then.
    """
    d, key = _target(target, dispatcher)
    source = caller_source()
    with d.lock:
        registry = _registry(d)
        registry.want(key)
        try:
            for handle in d.defined_ops():
                if registry.wants(handle.name) and handle.name not in registry.live:
                    registry.mirror(handle)
        except BaseException:
            registry.unwant(key)
            raise

    def undo() -> None:
        with d.lock:
            registry.unwant(key)

    return RegistrationHandle(undo, description=f"torch {key}", source=source)

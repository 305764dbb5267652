"""``customop.ops.<ns>.<name>.<overload>``: operators as Python attributes.

NOTE: an index kept by a listener. Each `Ops` listens to its dispatcher's
defs (`Dispatcher.add_listener`) and keeps an index of namespace -> name ->
overloads. Namespaces and packets, once looked up, are cached as plain
instance attributes, so ``customop.ops.ns.name`` costs two dictionary hits
however many ops exist; the listener drops them (and their call code) when
the last overload of a name goes, so a removed op leaves nothing behind.
Listeners run under the dispatcher's registration lock; a lookup that
misses takes that lock too before it decides a name is undefined, so it
never sees the middle of a write (a @custom_op redefinition is one write).
"""

from __future__ import annotations

import keyword
import weakref
from typing import Any, Final

from customop.dispatch import Dispatcher, OperatorHandle, OperatorListener
from customop.dispatch import dispatcher as default_dispatcher
from customop.ops._binding import MISSING
from customop.ops._callgen import CallCode, call_defaults, compile_call, type_checkable
from customop.ops._codegen import forget
from customop.ops._compiling import refuse_under_dynamo
from customop.ops._overload import OpOverload, bind_overload
from customop.ops._resolve import choose_overload
from customop.ops._swap import restore_class, swap_class
from customop.schema import FunctionSchema, OperatorName, close_matches

__all__ = ["OpNamespace", "OpOverloadPacket", "Ops", "ops"]

#: namespace -> operator name -> its defined overload names (an ordered set).
Index = dict[str, dict[str, dict[str, None]]]


def defined_names(dispatcher: Dispatcher) -> list[OperatorName]:
    return [name for name, entry in list(dispatcher._entries.items()) if entry.schema is not None]


def unmangle(name: str) -> str:
    """``from_`` -> ``from``: a Python keyword cannot be an attribute, so, as in
    PEP 8 and the generated stubs, ops and overloads named like one take a ``_``."""
    base = name[:-1]
    return base if name.endswith("_") and keyword.iskeyword(base) else name


def _close(name: str, choices: list[str]) -> str:
    close = close_matches(name, choices, n=3, cutoff=0.6)
    return f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""


def _cacheable(owner: object, attribute: str) -> bool:
    # An instance attribute would shadow the class's own names (methods), and
    # private names stay with __getattr__.
    return not attribute.startswith("_") and not hasattr(type(owner), attribute)


class OpOverloadPacket:
    """``ops.<ns>.<name>``: every overload of one operator name.

    Calling the packet picks the overload whose schema binds the arguments,
    types included; ``.default`` / ``.<overload>`` give one `OpOverload`.
    """

    def __init__(self, dispatcher: Dispatcher, ns: str, name: str, index: Index) -> None:
        self._dispatcher = dispatcher
        self._ns = ns
        self._name = name
        self._index = index
        self._overloads: dict[str, OpOverload] = {}
        self._choices: dict[Any, OpOverload] = {}
        # Replaced by the index's listener whenever this name's defs change.
        self._token: object = object()
        self._seen: object = None
        # The only overload, while there is one: packet calls then skip resolution.
        self._single: OpOverload | None = None

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose operators this packet calls."""
        return self._dispatcher

    @property
    def name(self) -> str:
        """``ns::name``."""
        return f"{self._ns}::{self._name}"

    def overloads(self) -> list[str]:
        """Overload names, ``"default"`` first.

        Returns:
            The names of the overloads defined now.
        """
        found = self._index.get(self._ns, {}).get(self._name, {})
        return sorted(found, key=lambda o: (o != "default", o))

    @property
    def schema(self) -> FunctionSchema:
        """The default overload's schema."""
        return self.default.schema

    @property
    def default(self) -> OpOverload:
        """The default overload (the one defined without an overload name)."""
        return self.overload("default")

    def overload(self, overload: str) -> OpOverload:
        """The `OpOverload` named ``overload`` (``"default"`` for the unnamed one).

        Args:
            overload: the overload's name.

        Returns:
            The overload.

        Raises:
            AttributeError: no such overload (the message lists the ones that exist).
        """
        cached = self._overloads.get(overload)
        # The very def it was bound for: a redefinition with an equal schema may
        # still differ in what it checks (a @custom_op's Literal choices).
        if cached is not None and cached.handle._entry.schema is cached.schema:
            return cached
        text = f"{self.name}.{overload}" if overload != "default" else self.name
        handle = self._dispatcher.find_op(text)
        if handle is None:
            with self._dispatcher._lock:  # not in the middle of a redefinition
                handle = self._dispatcher.find_op(text)
        if handle is None:
            known = self.overloads()
            raise AttributeError(
                f"ops.{self._ns}.{self._name}: no overload {overload!r}. An overload is "
                f"defined with the op's name plus '.overload'. Defined overloads: "
                f"{', '.join(known) or 'none'}.{_close(overload, known)}"
            )
        bound = bind_overload(handle, f"ops.{self._ns}.{self._name}.{overload}")
        self._overloads[overload] = bound
        return bound

    def __getattr__(self, overload: str) -> OpOverload:
        if overload.startswith("__") and overload.endswith("__"):
            raise AttributeError(overload)  # Python protocols (__deepcopy__, ...), never overloads
        refuse_under_dynamo(self.name)
        return self.overload(unmangle(overload))

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        refuse_under_dynamo(self.name)
        single = self._current_single()
        if single is not None:
            self._specialize(single)
            return single(*args, **kwargs)
        return self._resolve(args, kwargs)

    def _changed(self) -> None:
        """The listener's news: this name gained or lost an overload."""
        self._token = object()

    def _current_single(self) -> OpOverload | None:
        """The only overload, if there is exactly one (refreshed when the defs change)."""
        token = self._token  # read first: news meanwhile leaves a stale token behind
        if token is not self._seen:
            with self._dispatcher._lock:  # never decide in the middle of a write
                names = self.overloads()
                self._choices = {}
                self._single = self.overload(names[0]) if len(names) == 1 else None
                self._seen = token
        single = self._single
        # A redefinition with an equal schema keeps the name's overloads: rebind.
        if single is not None and single.handle._entry.schema is not single.schema:
            single = self._single = self.overload(single.overload_name)
        return single

    def _specialize(self, single: OpOverload) -> None:
        # NOTE: a packet with one overload takes that overload's generated call
        # code (on a subclass made for it), so `ops.ns.op(x)` costs what
        # `ops.ns.op.default(x)` does. Its slow path re-checks that the packet
        # still has just this overload, and falls back to resolution otherwise.
        site = single._site
        if site is None or getattr(type(self), "_specialized_for", None) is single:
            return
        packet_code = _PacketCode(self, single, site)
        call = compile_call(packet_code)
        swap_class(
            self,
            call,
            name=f"OpOverloadPacket[{self.name}]",
            base=OpOverloadPacket,
            attrs={"_specialized_for": single},
        )

    def _resolve(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        single = self._current_single()
        if single is not None:
            return single(*args, **kwargs)
        key = (tuple(map(type, args)), tuple(kwargs))
        chosen = self._choices.get(key)
        if chosen is None:
            candidates = [self.overload(name) for name in self.overloads()]
            chosen = choose_overload(self.name, candidates, args, kwargs)
            if chosen.schema.arguments and all(
                type_checkable(a.type) for a in chosen.schema.arguments
            ):
                self._choices[key] = chosen
        return chosen(*args, **kwargs)

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self.overloads()]

    def __repr__(self) -> str:
        return f"<OpOverloadPacket {self.name}: overloads {', '.join(self.overloads())}>"


class _PacketCode(CallCode):
    """The call code of a packet specialized to its single overload."""

    __slots__ = ("overload", "packet")

    def __init__(self, packet: OpOverloadPacket, overload: OpOverload, site: CallCode) -> None:
        super().__init__(site.handle, site.schema, site.is_tensor, site.api)
        self.checks = site.checks
        self.values = site.values
        self.fast = site.fast
        self.guard = site.guard
        self.packet = packet
        self.overload = overload

    def slow(
        self,
        values: tuple[Any, ...],
        extra: tuple[Any, ...] = (),
        unknown: dict[str, Any] | None = None,
    ) -> Any:
        if self.packet._current_single() is self.overload:
            return super().slow(values, extra, unknown)
        # The packet gained or lost overloads: resolve this call like any other,
        # with the arguments as given (this code filled in its old schema's defaults).
        restore_class(self.packet, OpOverloadPacket)
        values = self._as_given(values)
        args, kwargs = self.split(values)
        given = {k: v for k, v in kwargs.items() if v is not MISSING} | (unknown or {})
        positional = tuple(v for v in args if v is not MISSING) + extra
        return self.packet._resolve(positional, given)

    def _as_given(self, values: tuple[Any, ...]) -> tuple[Any, ...]:
        """``values`` with each argument that is its default object marked not given."""
        defaults = call_defaults(self.schema)
        return tuple(
            MISSING if default is not MISSING and value is default else value
            for value, default in zip(values, defaults, strict=True)
        )


class OpNamespace:
    """``ops.<ns>``: the operators of one namespace."""

    def __init__(self, dispatcher: Dispatcher, ns: str, index: Index) -> None:
        self._dispatcher = dispatcher
        self._ns = ns
        self._index = index
        self._packets: dict[str, OpOverloadPacket] = {}

    def names(self) -> list[str]:
        """The operator names defined in this namespace.

        Returns:
            The names (without namespace or overload), sorted.
        """
        return sorted(self._index.get(self._ns, {}))

    def __getattr__(self, attribute: str) -> OpOverloadPacket:
        name = unmangle(attribute)
        refuse_under_dynamo(f"{self._ns}::{name}")  # an op torch.compile cannot trace
        packet = self._packets.get(name)
        if packet is None:
            with self._dispatcher._lock:  # never decide in the middle of a write
                packet = self._packets.get(name) or self._new_packet(name)
        if _cacheable(self, attribute):
            self.__dict__[attribute] = packet  # later lookups: one dict hit
        return packet

    def _new_packet(self, name: str) -> OpOverloadPacket:
        known = self.names()
        if name.startswith("__") and name.endswith("__") and name not in known:
            raise AttributeError(name)  # Python protocols; `ops.aten.__and__` is an op
        if name not in known:
            raise AttributeError(
                f"ops.{self._ns}: no operator {name!r}. Operators appear here once they "
                f"are defined (custom_op or Library.define). Defined in {self._ns!r}: "
                f"{', '.join(known) or 'none'}.{_close(name, known)}"
            )
        packet = OpOverloadPacket(self._dispatcher, self._ns, name, self._index)
        self._packets[name] = packet
        return packet

    def _drop(self, name: str) -> None:
        """Forget ``name``'s packet (its last overload is gone)."""
        packet = self._packets.pop(name, None)
        if packet is not None:
            packet._changed()
        for attribute in (name, name + "_"):
            self.__dict__.pop(attribute, None)

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self.names()]

    def __repr__(self) -> str:
        return f"<OpNamespace {self._ns}: {', '.join(self.names())}>"


class Ops:
    """``customop.ops``: a namespace object per operator namespace."""

    def __init__(self, dispatcher: Dispatcher | None = None) -> None:
        self._dispatcher = default_dispatcher if dispatcher is None else dispatcher
        self._namespaces: dict[str, OpNamespace] = {}
        self._index: Index = {}
        handle = self._dispatcher.add_listener(_IndexListener(self))
        # The listener holds this object weakly; it goes when this object does.
        weakref.finalize(self, handle.remove)

    def namespaces(self) -> list[str]:
        """The namespaces that have at least one defined operator.

        Returns:
            The namespace names, sorted.
        """
        return sorted(self._index)

    def __getattr__(self, ns: str) -> OpNamespace:
        if ns.startswith("__"):
            raise AttributeError(ns)
        refuse_under_dynamo(f"{ns}::*")
        space = self._namespaces.get(ns)
        if space is None:
            with self._dispatcher._lock:  # never decide in the middle of a write
                space = self._namespaces.get(ns) or self._new_namespace(ns)
        if _cacheable(self, ns):
            self.__dict__[ns] = space
        return space

    def _new_namespace(self, ns: str) -> OpNamespace:
        if ns not in self._index:
            known = self.namespaces()
            raise AttributeError(
                f"ops: no namespace {ns!r}. A namespace appears once an operator is "
                f"defined in it. Namespaces: {', '.join(known) or 'none'}.{_close(ns, known)}"
            )
        space = self._namespaces[ns] = OpNamespace(self._dispatcher, ns, self._index)
        return space

    def loaded(self, name: OperatorName) -> tuple[Any, ...]:
        """The call objects this tree has made for op ``name`` already: its overload,
        and the packet when the overload is its name's only one (never makes new ones).

        Args:
            name: the op's name.

        Returns:
            The objects, or ``()``.
        """
        space = self._namespaces.get(name.namespace)
        packet = space._packets.get(name.name) if space is not None else None
        if packet is None:
            return ()
        overload = packet._overloads.get(name.overload or "default")
        if overload is None:
            return ()
        return (overload, packet) if packet.overloads() == [overload.overload_name] else (overload,)

    def _added(self, name: OperatorName) -> None:
        names = self._index.setdefault(name.namespace, {})
        names.setdefault(name.name, {})[name.overload or "default"] = None
        space = self._namespaces.get(name.namespace)
        packet = space._packets.get(name.name) if space is not None else None
        if packet is not None:
            packet._changed()

    def _removed(self, name: OperatorName) -> None:
        forget("generated", str(name))
        ns = name.namespace
        names = self._index.get(ns, {})
        overloads = names.get(name.name, {})
        overloads.pop(name.overload or "default", None)
        space = self._namespaces.get(ns)
        if overloads:
            packet = space._packets.get(name.name) if space is not None else None
            if packet is not None:
                packet._changed()
            return
        names.pop(name.name, None)
        if space is not None:
            space._drop(name.name)
        if not names:
            self._index.pop(ns, None)
            self._namespaces.pop(ns, None)
            self.__dict__.pop(ns, None)

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self.namespaces()]


class _IndexListener(OperatorListener):
    """Keeps an `Ops` index current; holds the `Ops` weakly (see the module note)."""

    __slots__ = ("_ops",)

    def __init__(self, owner: Ops) -> None:
        self._ops = weakref.ref(owner)

    def on_operator_registered(self, op: OperatorHandle) -> None:
        owner = self._ops()
        if owner is not None:
            owner._added(op.name)

    def on_operator_deregistered(self, op: OperatorHandle) -> None:
        owner = self._ops()
        if owner is not None:
            owner._removed(op.name)


#: The operators of the process-wide dispatcher.
ops: Final = Ops()

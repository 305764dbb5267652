"""The typed stub (``<module>.pyi``): classes that describe ``customop.ops`` namespaces.

Per namespace the stub declares a class whose attributes are the operators;
per operator a packet class with one attribute per overload and a
``__call__`` per overload (``@typing.overload`` when there are several); per
overload a class with its exact ``__call__``. At run time the names are the
real ``customop.ops`` objects, so the stub costs nothing per call.

Names the stub itself needs (``_Tensor``, ``_int``, ``_overload``, ...) start
with ``_`` and are module-level aliases, as in torch's own stubs: inside a
packet class an overload attribute named ``int`` or ``Tensor`` would
otherwise shadow the type of the same name.
"""

from __future__ import annotations

import re

from customop.codegen import _templates as t
from customop.codegen._model import Declaration, DeclarationFile, plural
from customop.codegen._names import python_name
from customop.codegen._render import py_string, safe_text, source_name
from customop.schema import (
    BaseType,
    DictType,
    FunctionSchema,
    ListType,
    OptionalType,
    SchemaType,
    TupleType,
    UnionType,
)

__all__ = ["STUB_HELPERS", "annotation", "render_stubs"]

#: Schema base type -> annotation. One table; lists, optionals and the rest are
#: built around these by `annotation`.
_BASE: dict[str, str] = {
    "Tensor": "_Tensor",
    "int": "_int", "SymInt": "_int", "DeviceIndex": "_int",
    "Layout": "_int", "MemoryFormat": "_int", "QScheme": "_int",  # torch enums, by their codes
    "float": "_float", "SymFloat": "_float",
    "bool": "_bool", "SymBool": "_bool",
    "str": "_str", "Dimname": "_str",
    "complex": "_complex",
    "Scalar": "_Scalar", "number": "_Scalar",
    "ScalarType": "_ScalarType",
    "Device": "_Device",
    "Generator": "_Generator",
    "NoneType": "None",
    "Any": "_Any", "AnyClassType": "_Any", "AnyEnumType": "_Any", "Capsule": "_Any",
    "ConstQuantizerPtr": "_Any", "Storage": "_Any", "Stream": "_Any",
}  # fmt: skip

#: The stub's helper names -> the line that defines each, in the order they are
#: written: imports in isort's groups (stdlib, numpy, customop), then type aliases.
_IMPORT_GROUPS: tuple[dict[str, str], ...] = (
    {
        "_Sequence": "from collections.abc import Sequence as _Sequence",
        "_Any": "from typing import Any as _Any",
        "_Final": "from typing import Final as _Final",
        "_TypeAlias": "from typing import TypeAlias as _TypeAlias",
        "_final": "from typing import final as _final",
        "_overload": "from typing import overload as _overload",
    },
    {"_np": "import numpy as _np"},
    {
        "_Tensor": "from customop.tensor import Tensor as _Tensor",
        "_dtype": "from customop.tensor import dtype as _dtype",
        "_DeviceObj": "from customop.tensor import Device as _DeviceObj",
    },
)
_ALIASES: dict[str, str] = {
    "_int": "_int: _TypeAlias = int",
    "_float": "_float: _TypeAlias = float",
    "_bool": "_bool: _TypeAlias = bool",
    "_str": "_str: _TypeAlias = str",
    "_complex": "_complex: _TypeAlias = complex",
    "_Scalar": "_Scalar: _TypeAlias = int | float | bool | complex",
    "_ScalarType": "_ScalarType: _TypeAlias = _np.dtype[_Any] | type[_np.generic] | _dtype",
    "_Device": "_Device: _TypeAlias = str | _DeviceObj",
    "_Generator": "_Generator: _TypeAlias = _np.random.Generator",
}
STUB_HELPERS: frozenset[str] = frozenset(_ALIASES).union(*_IMPORT_GROUPS)
# A packet call runs the first overload that fits, as mypy picks the first
# matching @overload; overloads that overlap or that an earlier one shadows
# (reachable only as packet.<overload>) are how operators overload, not bugs.
_OVERLOAD_CONFIG = '# mypy: disable-error-code="overload-overlap, overload-cannot-match"\n'
_WORD = re.compile(r"\b_[A-Za-z]\w*")


def _int_list(tp: ListType) -> bool:
    elem = tp.elem
    return tp.size is not None and isinstance(elem, BaseType) and elem.name in ("int", "SymInt")


def annotation(tp: SchemaType, *, param: bool) -> str:
    """The annotation of a schema type, for a parameter (``param``) or a return value.

    Parameters take any ``Sequence`` where returns give a ``list``; a
    fixed-size int list parameter (``int[2]``) also takes one int, which
    stands for that many copies, as in torch.
    """
    if isinstance(tp, BaseType):
        return _BASE[tp.name]
    if isinstance(tp, OptionalType):
        return f"{annotation(tp.elem, param=param)} | None"
    if isinstance(tp, ListType):
        elem = annotation(tp.elem, param=param)
        if not param:
            return f"list[{elem}]"
        return f"{elem} | _Sequence[{elem}]" if _int_list(tp) else f"_Sequence[{elem}]"
    if isinstance(tp, TupleType):
        return "tuple[" + ", ".join(annotation(e, param=param) for e in tp.elems) + "]"
    if isinstance(tp, DictType):
        return f"dict[{annotation(tp.key, param=param)}, {annotation(tp.value, param=param)}]"
    if isinstance(tp, UnionType):
        return " | ".join(annotation(e, param=param) for e in tp.elems)
    return "_Any"  # type variables, futures and TorchScript classes have no Python type here


def _receiver(schema: FunctionSchema) -> str:
    """A name for ``__call__``'s own first parameter that no argument has."""
    names = {python_name(arg.name) for arg in schema.arguments}
    receiver = "self"
    while receiver in names:
        receiver = "_" + receiver
    return receiver


def _signature(schema: FunctionSchema) -> str:
    """``__call__``'s parameters. A positional argument named like a keyword
    (``int from``) cannot be passed by name in Python, so it and those before
    it are positional-only (the ``/`` moves after it)."""
    positional = schema.positional_arguments
    keywords = [i for i, arg in enumerate(positional) if python_name(arg.name) != arg.name]
    slash = keywords[-1] + 1 if keywords else 0
    params = [_receiver(schema)]
    for index, arg in enumerate(schema.arguments):
        if index == slash:
            params.append("/")
        if arg.kwarg_only and "*" not in params:
            params.append("*")
        default = " = ..." if arg.default is not None else ""
        params.append(f"{python_name(arg.name)}: {annotation(arg.type, param=True)}{default}")
    if "/" not in params:
        params.insert(slash + 1, "/")
    if schema.is_vararg:
        star = params.index("*") if "*" in params else len(params)
        params[star : star + 1] = ["*args: _Any"]
    return ", ".join(params)


def _returns(schema: FunctionSchema) -> str:
    if schema.is_varret:
        return "_Any"
    types = [annotation(ret.type, param=False) for ret in schema.returns]
    if not types:
        return "None"
    return types[0] if len(types) == 1 else "tuple[" + ", ".join(types) + "]"


class _Names:
    """Class names unique in the stub: ``_<ns>``, ``_<ns>_<op>``, ``_<ns>_<op>_<overload>``."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken

    def new(self, *parts: str) -> str:
        name = "_" + "_".join(parts)
        unique, n = name, 1
        while unique in self.taken:
            n += 1
            unique = f"{name}_{n}"
        self.taken.add(unique)
        return unique


def _packet(op: str, decls: list[Declaration], names: _Names) -> tuple[str, str]:
    """The overload classes and the packet class of one operator, and the packet's name."""
    namespace = decls[0].namespace
    text, attributes, calls = [], [], []
    for decl in decls:
        overload = decl.name.overload or "default"
        cls = names.new(namespace, op, overload)
        signature, returns = _signature(decl.func), _returns(decl.func)
        text.append(
            t.OVERLOAD_CLASS.substitute(
                cls=cls, doc=safe_text(decl.func.format("source")), signature=signature,
                returns=returns,
            )
        )  # fmt: skip
        attributes.append(f"    {python_name(overload)}: _Final[{cls}]")
        decorator = "    @_overload\n" if len(decls) > 1 else ""
        calls.append(f"{decorator}    def __call__({signature}) -> {returns}: ...")
    cls = names.new(namespace, op)
    overloads = ", ".join(d.name.overload or "default" for d in decls)
    if len(decls) == 1:
        doc = f"{namespace}::{op}, one overload: {overloads}."
    else:
        doc = f"{namespace}::{op}, overloads: {overloads}. A call runs the first that fits."
    text.append(
        t.PACKET_CLASS.substitute(
            cls=cls, doc=doc, attributes="\n".join(attributes), calls="\n".join(calls)
        )
    )
    return "".join(text), cls


def _namespace(namespace: str, decls: list[Declaration], names: _Names) -> tuple[str, str]:
    """The classes of one namespace, and the namespace class's name."""
    ops: dict[str, list[Declaration]] = {}
    for decl in decls:
        ops.setdefault(decl.name.name, []).append(decl)
    text, attributes = [], []
    for op, overloads in ops.items():
        packet_text, cls = _packet(op, overloads, names)
        text.append(packet_text)
        attributes.append(f"    {python_name(op)}: _Final[{cls}]")
    cls = names.new(namespace)
    text.append(
        t.NAMESPACE_CLASS.substitute(
            cls=cls,
            namespace=namespace,
            operators=plural(len(ops), "operator"),
            attributes="\n".join(attributes),
        )
    )
    return "".join(text), cls


def _helpers(body: str) -> tuple[str, str]:
    """The import lines and the alias lines for the helper names ``body`` uses."""
    used = set(_WORD.findall(body)) | {"_final", "_Final"}
    aliases = [line for name, line in _ALIASES.items() if name in used]
    used |= set(_WORD.findall("\n".join(aliases))) | ({"_TypeAlias"} if aliases else set())
    groups = ["\n".join(line for name, line in g.items() if name in used) for g in _IMPORT_GROUPS]
    return "\n\n".join(group for group in groups if group), "".join(f"\n{a}" for a in aliases)


def render_stubs(declarations: DeclarationFile, module: str) -> str:
    """The text of ``<module>.pyi`` for a validated declaration file.

    Args:
        declarations: the validated declarations.
        module: the generated module's name.

    Returns:
        The stub's source text.
    """
    decls = declarations.declarations
    # Class names must not equal any attribute name, lest an attribute shadow a class.
    taken = set(STUB_HELPERS) | {"default"}
    taken |= {
        python_name(part) for d in decls for part in (d.namespace, d.name.name, d.name.overload)
    }
    names = _Names(taken)
    classes, bindings = [], []
    for namespace, members in declarations.by_namespace().items():
        text, cls = _namespace(namespace, members, names)
        classes.append(text)
        bindings.append(f"{python_name(namespace)}: _Final[{cls}]")
    body = "".join(classes)
    imports, aliases = _helpers(body)
    exported = sorted([*map(python_name, declarations.namespaces), "unregister"])
    overlapping = any("@_overload" in text for text in classes)
    source = source_name(declarations)
    return t.STUB.substitute(
        header=t.HEADER.substitute(source=source),
        source=source,
        module=module,
        config=_OVERLOAD_CONFIG if overlapping else "",
        imports=imports,
        all=", ".join(py_string(name) for name in exported),
        aliases=aliases,
        classes=body,
        namespaces="".join(f"\n{binding}" for binding in bindings),
    )

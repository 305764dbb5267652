"""Per-operator call code: a function with the schema's exact signature.

NOTE: why generated code. A generic ``op(*args, **kwargs)`` has to pack the
arguments, walk the schema and look kernels up on every call. Instead each
operator gets a real Python function (see `_calltemplate`; shown in
tracebacks as ``<customop generated ns::op>``) that binds arguments the way
Python binds any call, then:

* fast path: if one of its two cache entries (the epoch clock empties them on
  every registration change) was filled under the context's include/exclude
  keys and with the same type for every argument (a list: the same item
  types too), call that entry's kernel directly: one identity test per
  argument, and no ContextVar read while no context anywhere has local keys.
* slow path (`CallCode.slow`): explain binding errors, check every argument
  against the schema, ask the dispatcher for the kernel, refill the cache
  when caching is allowed, and call.

Literal choices are checked on the fast path too, as a set membership test
after the type matched. Ops whose arguments cannot be checked by their types
alone (tuples, dicts, optional or fixed-size lists) always take the slow
path. Entering or leaving an include/exclude block empties no cache: an
entry is keyed on the context's local keys.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Sequence
from operator import countOf
from typing import Any, Final

from customop.dispatch import (
    LOCAL_KEYS,
    Epoch,
    OperatorHandle,
    epoch,
    local_state,
    missing_kernel,
    select_kernel,
    undefined_kernel,
)
from customop.exceptions import RegistrationError
from customop.ops._binding import MISSING, binding_error, explaining_qualname
from customop.ops._calltemplate import CallShape, named_code
from customop.ops._checks import (
    Check,
    attached_value_checks,
    checked_values,
    value_check,
)
from customop.ops._codegen import compile_function
from customop.ops._debugstate import debug_state
from customop.schema import Argument, BaseType, FunctionSchema, ListType, OptionalType
from customop.tensor import dtype_from_code

__all__ = [
    "CallCode",
    "call_defaults",
    "can_generate",
    "compile_call",
    "items_checkable",
    "python_default",
    "type_checkable",
]

_local_get: Final = LOCAL_KEYS.get
#: The table entries of an operator with no kernel (or no def) for a call's keys.
_WAITING: Final = (missing_kernel, undefined_kernel)
_SINGLE: Final = frozenset({"tensor", "optional"})
# Not Device: its value must parse and name a backend ("cuda:abc" is a str too).
_TYPE_CHECKABLE: Final = frozenset(
    {"Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType", "complex"}
)


def type_checkable(tp: object) -> bool:
    """Whether a value's type alone decides its check (``T``, ``T?``)."""
    inner = tp.elem if type(tp) is OptionalType else tp
    return type(inner) is BaseType and inner.name in _TYPE_CHECKABLE


def items_checkable(tp: object) -> bool:
    """Whether the types of a list's items decide its check: ``T[]`` (no fixed
    size, which also takes a bare value) of a type-checkable ``T``."""
    return type(tp) is ListType and tp.size is None and type_checkable(tp.elem)


class CallCode:
    """What a generated call function closes over: the op, its checks, its cache."""

    __slots__ = (
        "__weakref__",
        "api",
        "checks",
        "fast",
        "function",
        "guard",
        "handle",
        "is_tensor",
        "keywords",
        "lists",
        "namespace",
        "npos",
        "required",
        "schema",
        "static_keys",
        "tensors",
        "values",
    )

    def __init__(
        self,
        handle: OperatorHandle,
        schema: FunctionSchema,
        is_tensor: Check,
        api: str,
        value_checks: dict[int, Check] | None = None,
    ) -> None:
        self.handle = handle
        self.schema = schema
        self.api = api
        self.is_tensor = is_tensor
        self.checks = _checks_for(schema, is_tensor, value_checks)
        arguments = schema.arguments
        # Type identity proves an argument valid only if its check looks at the type
        # alone, or for a list at its items' types: not for value checks (Literal
        # choices), nor for optional or fixed-size lists, tuples and dicts.
        #: Indices of the list arguments whose items' types the cache keeps too.
        self.lists = tuple(i for i, a in enumerate(arguments) if items_checkable(a.type))
        #: Value-checked arguments whose check is membership in a set of allowed
        #: values (Literal choices): the fast path tests that, after their type.
        self.values: dict[int, frozenset[Any]] = _membership(value_checks or {})
        self.fast = len(self.values) == len(value_checks or {}) and all(
            type_checkable(a.type) or i in self.lists or i in self.values
            for i, a in enumerate(arguments)
        )
        if not schema.tensor_argument_positions and any(
            str(a.type).removesuffix("?") == "Device" for a in arguments
        ):
            # A factory op dispatches on its Device argument's value, which no
            # argument type says: every call picks its kernel.
            self.fast = False
        self.npos = sum(1 for arg in arguments if not arg.kwarg_only)
        self.keywords = tuple(arg.name for arg in arguments if arg.kwarg_only)
        self.required = tuple(i for i, arg in enumerate(arguments) if arg.default is None)
        #: (index, is a list) of each argument that carries tensors.
        self.tensors = tuple(
            (i, kind not in _SINGLE) for i, kind in schema.tensor_argument_positions
        )
        self.static_keys = handle.dispatcher._backends.fast
        #: The generated function's globals; its cache lives there (see `cache`).
        self.namespace: dict[str, Any] = {"_co_cache": _EMPTY, "_co_older": _EMPTY}
        #: Raises when the owner may no longer call (e.g. a replaced @custom_op).
        self.guard: Callable[[], None] | None = None
        #: The generated call function (set by `compile_call`).
        self.function: Callable[..., Any] = self.slow

    # NOTE: a cache entry is [local keys, type of each argument..., kernel,
    # item types of each list in `lists`...]. Two entries, the newest and the
    # one before, live in the generated function's globals, where the fast path
    # reads each with one LOAD_GLOBAL (cheaper than a global plus an attribute):
    # calls that alternate between two sets of argument types (`f(x, 1)`,
    # `f(x, 0.5)`) stay on the fast path. An entry is replaced whole (a call
    # reads it once, so never half of one fill and half of another), and the
    # epoch clock empties both on every registration change. The empty entry's
    # first item never matches, so the first call takes the slow path.

    @property
    def kernel_index(self) -> int:
        """Where a cache entry keeps its kernel (see `_calltemplate`)."""
        return len(self.schema.arguments) + 1

    @property
    def cache(self) -> list[Any]:
        """The newest entry; setting it keeps the one it replaces as the older."""
        return self.namespace["_co_cache"]  # type: ignore[no-any-return]

    @cache.setter
    def cache(self, value: list[Any]) -> None:
        namespace = self.namespace
        namespace["_co_older"] = namespace["_co_cache"]
        namespace["_co_cache"] = value

    def clear_cache(self) -> None:
        self.namespace.update(_co_cache=_EMPTY, _co_older=_EMPTY)

    def kernel(self, values: tuple[Any, ...]) -> Callable[..., Any]:
        """The kernel for these arguments now; fills the cache when it may."""
        token, fn = self._select(values)
        self._fill(token, values, fn)
        return fn

    def _select(self, values: tuple[Any, ...]) -> tuple[Epoch, Callable[..., Any]]:
        """The epoch token, then the kernel the current table picks for ``values``."""
        token = epoch.calls  # read first: a change meanwhile leaves a stale token behind
        state = self.handle._state
        local = _local_get()
        return token, select_kernel(
            self.handle, (state[2](values, {}) | local.included) & local.kept, state
        )

    def _current_kernel(self, values: tuple[Any, ...]) -> tuple[Epoch, Callable[..., Any]]:
        """The kernel of this callable's own generation (else its "replaced" error).

        NOTE: one generation per call (issue #27). The kernel is read first, then
        the definition is checked to be current; if any registration came in
        between (the epoch moved), a redefinition may have come and gone, leaving
        an equal schema over another generation's table, so both are read again
        under the registration lock, which every write holds.
        """
        token, fn = self._select(values)
        self._check_current()
        if epoch.calls is not token or getattr(fn, "func", None) in _WAITING:
            # (Also a table read in the middle of a write, which holds the lock: its
            # "no kernel" entries would wait for the write, then run the next one's.)
            with self.handle._entry.dispatcher._lock:
                token, fn = self._select(values)
                self._check_current()
        return token, fn

    def _checked(self, values: tuple[Any, ...]) -> tuple[Any, ...]:
        """``values`` past this callable's checks (a list argument given as a sequence, a list)."""
        return checked_values(self.schema, values, self.checks, self.api)

    def _check_current(self) -> None:
        if self.guard is not None or self.handle._entry.schema is not self.schema:
            self.check_schema()

    def _fill(self, token: Epoch, values: tuple[Any, ...], fn: Callable[..., Any]) -> None:
        if self.fast and self._static(values):
            # NOTE: an entry is keyed on the context's include/exclude keys too (the
            # value object, by identity), so calls inside `include_keys` blocks, e.g.
            # under FakeTensorMode, keep the fast path.
            local = _local_get()
            items = [item_types(values[i]) for i in self.lists]
            epoch.fill(token, self, [local, *map(type, values), fn, None, *items])

    def _static(self, values: tuple[Any, ...]) -> bool:
        # An array type whose keys depend on the instance (a torch tensor's device)
        # is not in the static-keys table: its type alone cannot pick the kernel.
        static = self.static_keys
        for index, is_list in self.tensors:
            value = values[index]
            items = value if is_list else (value,)
            if not all(item is None or type(item) in static for item in items):
                return False
        return not debug_state.blocks

    def check_schema(self) -> None:
        if self.guard is not None:
            self.guard()
        current = self.handle._entry.schema
        if current is self.schema or current is None:
            return
        if current != self.schema:
            raise RegistrationError(
                f"{self.api}: this callable was made for {self.schema}, but the operator has "
                f"been redefined as {current}. A call would bind arguments to the old schema. "
                f"Look the operator up again (customop.ops.{self.schema.namespace}."
                f"{self.schema.name.name if self.schema.name else ''})."
            )
        # Defined anew with the same signature: bind the same way, but check what
        # the new definition checks (a @custom_op's Literal choices may differ).
        # This code was compiled for the old checks, so with value checks the
        # cache never fills again and every call takes the checking slow path.
        value_checks = attached_value_checks(self.handle, current)
        self.schema = current
        self.checks = _checks_for(current, self.is_tensor, value_checks)
        if value_checks:
            self.fast = False
            self.clear_cache()

    def slow(
        self,
        values: tuple[Any, ...],
        extra: tuple[Any, ...] = (),
        unknown: dict[str, Any] | None = None,
    ) -> Any:
        """Everything the fast path skips: binding errors, checks, kernel lookup."""
        if extra or unknown:
            binding_error(self.schema, values, extra, self.api, unknown)
        for index in self.required:
            if values[index] is MISSING:
                binding_error(self.schema, values, extra, self.api)
        # Argument checks first: a bad value (a Device naming no backend) is reported
        # as the argument's error, before the key extractor reads it. A callable kept
        # across a redefinition with this schema takes up the new checks first.
        self._check_current()
        checks = self.checks
        values = self._checked(values)
        token, fn = self._current_kernel(values)
        if self.checks is not checks:  # redefined with this schema: its own checks
            values = self._checked(values)
        self._fill(token, values, fn)
        if debug_state.active:
            return debug_state.run(self.schema, fn, *self.split(values))
        if not self.keywords:
            return fn(*values)
        args, kwargs = self.split(values)
        return fn(*args, **kwargs)

    def split(self, values: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        npos = self.npos
        return values[:npos], dict(zip(self.keywords, values[npos:], strict=True))


def _membership(value_checks: dict[int, Check]) -> dict[int, frozenset[Any]]:
    """The allowed values of each value check that is a set membership test."""
    found: dict[int, frozenset[Any]] = {}
    for index, check in value_checks.items():
        allowed = getattr(check, "allowed", None)
        if type(allowed) is frozenset:
            found[index] = allowed
    return found


def _checks_for(
    schema: FunctionSchema, is_tensor: Check, value_checks: dict[int, Check] | None
) -> tuple[Check, ...]:
    """Each argument's check: its type's, or the value check given for its index."""
    checks = [value_check(arg.type, is_tensor) for arg in schema.arguments]
    for index, check in (value_checks or {}).items():
        checks[index] = check
    return tuple(checks)


_EMPTY: Final[list[Any]] = [object()]  # matches no local-keys tuple


def item_types(items: Sequence[Any]) -> type | tuple[type, ...]:
    """A list's cache entry: the type all its items share, or each item's type.

    Args:
        items: the list argument.

    Returns:
        One type, or a tuple of types.
    """
    if items:
        first = type(items[0])
        if countOf(map(type, items), first) == len(items):
            return first
    return tuple(map(type, items))


def python_default(arg: Argument) -> Any:
    """The value a kernel gets for an omitted argument: ScalarType codes become dtypes."""
    value = arg.default.value if arg.default is not None else None
    inner = arg.type.elem if isinstance(arg.type, OptionalType) else arg.type
    if isinstance(inner, BaseType) and inner.name == "ScalarType" and type(value) is int:
        return dtype_from_code(value)
    return value


def compile_call(site: CallCode) -> Callable[..., Any]:
    """The call function for ``site``.

    NOTE: classes take it as ``__call__ = staticmethod(fn)``: Python then calls
    it with the arguments as given, without first copying them behind the
    instance (about 15 ns less per call than a plain method).

    The function is a compiled template with the schema's parameter names put
    in, named ``<customop generated ns::op>`` for tracebacks (`_codegen`).
    """
    schema = site.schema
    names = tuple(arg.name for arg in schema.arguments)
    npos = site.npos
    shape = CallShape(len(names), npos, site.lists, site.fast, tuple(site.values))
    code, lines = named_code(shape, names)
    namespace = site.namespace
    namespace.update(
        _co_site=site,
        _co_type=type,
        _co_local=_local_get,
        _co_state=local_state,
        _co_tuple=tuple,
        _co_map=map,
        _co_count=countOf,
        _co_len=len,
        **{f"_co_v{index}": allowed for index, allowed in site.values.items()},
    )
    defaults = call_defaults(schema)
    fn = compile_function(
        "generated",
        str(schema.name),
        (code, lines),
        namespace,
        defaults=defaults[:npos],
        kwdefaults=dict(zip(names[npos:], defaults[npos:], strict=True)),
        qualname=explaining_qualname(str(schema.name), site.api, names, npos),
    )
    site.function = fn
    return fn


def call_defaults(schema: FunctionSchema) -> list[Any]:
    """Each parameter's default in generated code: the schema's, else `MISSING`."""
    return [MISSING if a.default is None else python_default(a) for a in schema.arguments]


def can_generate(schema: FunctionSchema) -> bool:
    """Whether the schema's arguments can be a Python signature: identifier names
    (not keywords, not customop's own ``_co_`` names), defaults only trailing."""
    names = [arg.name for arg in schema.arguments]
    if schema.is_vararg or not all(
        name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_co_")
        for name in names
    ):
        return False
    positional = [arg for arg in schema.arguments if not arg.kwarg_only]
    defaulted = [arg.default is not None for arg in positional]
    return defaulted == sorted(defaulted)

"""Per-operator call code: a function with the schema's exact signature.

NOTE: why generated code. A generic ``op(*args, **kwargs)`` has to pack the
arguments, walk the schema and look kernels up on every call. Instead each
operator gets a real Python function (rendered from `_TEMPLATE`, compiled
once, shown in tracebacks as ``<customop generated ns::op>``) that binds
arguments the way Python binds any call, then:

* fast path: if the global registration epoch is the one its one-entry cache
  was filled under, and every argument has the same type as then, call the
  cached kernel directly. One global read, one identity test per argument.
* slow path (`CallSite.slow`): check every argument against the schema, ask
  the dispatcher for the kernel (thread-local keys included), refill the cache
  when caching is allowed, and call.

Ops whose arguments cannot be checked by type alone (lists, tuples, dicts,
varargs) always take the slow path: a list's type says nothing of its items.
"""

from __future__ import annotations

import keyword
import linecache
from collections.abc import Callable
from functools import partial
from types import CodeType, FunctionType
from typing import Any, Final

from customop.dispatch import DispatchKeySet, OperatorHandle, epoch
from customop.dispatch._local import LOCAL_KEYS
from customop.exceptions import RegistrationError
from customop.library._binding import MISSING, binding_error
from customop.library._checks import Check, argument_type_error, value_check
from customop.library._debug import debug_state
from customop.schema import Argument, BaseType, FunctionSchema, OptionalType
from customop.tensor import dtype_from_code

__all__ = ["CallSite", "can_generate", "compile_call", "python_default", "type_checkable"]

_local_get: Final = LOCAL_KEYS.get
_SINGLE: Final = frozenset({"tensor", "optional"})
_TYPE_CHECKABLE: Final = frozenset(
    {"Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType", "Device", "complex"}
)


def type_checkable(tp: object) -> bool:
    inner = tp.elem if isinstance(tp, OptionalType) else tp
    return isinstance(inner, BaseType) and inner.name in _TYPE_CHECKABLE


class CallSite:
    """What a generated call function closes over: the op, its checks, its cache."""

    __slots__ = (
        "api",
        "cache",
        "checks",
        "fast",
        "guard",
        "handle",
        "keywords",
        "npos",
        "required",
        "schema",
        "static_keys",
        "tensors",
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
        checks = [value_check(arg.type, is_tensor) for arg in schema.arguments]
        for index, check in (value_checks or {}).items():
            checks[index] = check
        self.checks = tuple(checks)
        # Type identity proves an argument valid only if its check looks at the type
        # alone: not for lists (their items) nor for value checks (Literal choices).
        self.fast = not value_checks and all(type_checkable(a.type) for a in schema.arguments)
        self.npos = sum(1 for arg in schema.arguments if not arg.kwarg_only)
        self.keywords = tuple(arg.name for arg in schema.arguments if arg.kwarg_only)
        self.required = tuple(i for i, arg in enumerate(schema.arguments) if arg.default is None)
        self.tensors = tuple(i for i, kind in schema.tensor_argument_positions if kind in _SINGLE)
        self.static_keys = handle.dispatcher._backends.fast
        # [epoch token, local keys, type of each argument..., kernel]; a fresh
        # object never matches, so the first call takes the slow path.
        self.cache: list[Any] = [object()] * (len(schema.arguments) + 3)
        #: Raises when the owner may no longer call (e.g. a replaced @custom_op).
        self.guard: Callable[[], None] | None = None

    def kernel(self, values: tuple[Any, ...]) -> tuple[Callable[..., Any], bool]:
        """The kernel for these arguments now, and whether it may be cached."""
        token = epoch.token  # read first: a change meanwhile leaves a stale token behind
        table, mask, extract = self.handle._state
        local = _local_get()
        included, kept = local
        bits = (extract(values, {}) | included) & kept & mask
        fn, boxed = table[bits.bit_length() - 1]
        if boxed:
            fn = partial(fn, self.handle, DispatchKeySet.from_bits(bits))
        # NOTE: the cache is keyed on the context's include/exclude keys too (the
        # tuple object, by identity: one ContextVar read per call), so calls inside
        # `include_keys` blocks, e.g. under FakeTensorMode, keep the fast path.
        # An array type whose keys depend on the instance (a torch tensor's device)
        # is not in the static-keys table: its type alone cannot pick the kernel.
        static = self.static_keys
        cacheable = not debug_state.blocks and all(
            values[i] is None or type(values[i]) in static for i in self.tensors
        )
        if cacheable:
            self.cache[0] = token
            self.cache[1] = local
        return fn, cacheable

    def check_schema(self) -> None:
        if self.guard is not None:
            self.guard()
        current = self.handle._entry.schema
        if current is not self.schema and current is not None and current != self.schema:
            raise RegistrationError(
                f"{self.api}: this callable was made for {self.schema}, but the operator has "
                f"been redefined as {current}. A call would bind arguments to the old schema. "
                f"Look the operator up again (customop.ops.{self.schema.namespace}."
                f"{self.schema.name.name if self.schema.name else ''})."
            )

    def slow(self, values: tuple[Any, ...], extra: tuple[Any, ...] = ()) -> Any:
        """Everything the fast path skips: binding errors, checks, kernel lookup."""
        if extra:
            binding_error(self.schema, values, extra, self.api)
        for index in self.required:
            if values[index] is MISSING:
                binding_error(self.schema, values, extra, self.api)
        if self.guard is not None or self.handle._entry.schema is not self.schema:
            self.check_schema()
        for index, check in enumerate(self.checks):
            if not check(values[index]):
                argument_type_error(self.schema, index, values[index], self.api, check)
        fn, cacheable = self.kernel(values)
        if cacheable:
            cache = self.cache
            cache[2:-1] = [type(value) for value in values]
            cache[-1] = fn
        if debug_state.active:
            return debug_state.run(self.schema, fn, *self.split(values))
        if not self.keywords:
            return fn(*values)
        args, kwargs = self.split(values)
        return fn(*args, **kwargs)

    def split(self, values: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        npos = self.npos
        return values[:npos], dict(zip(self.keywords, values[npos:], strict=True))


_FAST = """\
def {function}({params}):
    _co_c = _co_site.cache
    if {fast_test}:
        return _co_c[{kernel_index}]({call_args})
    return _co_site.slow(({values}), _co_extra)
"""

_SLOW = """\
def {function}({params}):
    return _co_site.slow(({values}), _co_extra)
"""

# Compiled templates by signature shape: compile() costs ~40 µs, renaming the
# parameters of a compiled template (CodeType.replace) ~1.5 µs.
_TEMPLATES: dict[tuple[int, int, bool, bool], CodeType] = {}


def _render(names: list[str], npos: int, fast: bool, method: bool, function: str) -> str:
    # Every parameter has a default (the schema's, or the MISSING sentinel) and
    # surplus positionals are collected, so a missing or surplus argument
    # reaches `CallSite.slow`, which explains it against the schema. On the fast
    # path MISSING costs nothing: its type never matches a cached argument type.
    # NOTE: no **kwargs catch-all: CPython allocates its dict on every call
    # (~50 ns, a third of the wrapper floor). An unknown keyword gets Python's
    # own TypeError, which names the op (the code's qualname) and the keyword.
    params = (["_co_self"] if method else []) + names[:npos] + ["*_co_extra", *names[npos:]]
    tests = ["not _co_extra", "_co_c[0] is _co_epoch.token", "_co_c[1] is _co_local()"]
    tests += [f"_co_type({name}) is _co_c[{i + 2}]" for i, name in enumerate(names)]
    call_args = names[:npos] + [f"{name}={name}" for name in names[npos:]]
    return (_FAST if fast else _SLOW).format(
        function=function,
        params=", ".join(params),
        fast_test=" and ".join(tests),
        kernel_index=len(names) + 2,
        call_args=", ".join(call_args),
        values=", ".join(names) + "," if names else "",
    )


def _template(npos: int, nkw: int, fast: bool, method: bool) -> CodeType:
    shape = (npos, nkw, fast, method)
    code = _TEMPLATES.get(shape)
    if code is None:
        placeholders = [f"_co_a{i}" for i in range(npos + nkw)]
        module = compile(_render(placeholders, npos, fast, method, "_co_f"), "<customop>", "exec")
        code = next(c for c in module.co_consts if isinstance(c, CodeType))
        _TEMPLATES[shape] = code
    return code


def python_default(arg: Argument) -> Any:
    """The value a kernel gets for an omitted argument: ScalarType codes become dtypes."""
    value = arg.default.value if arg.default is not None else None
    inner = arg.type.elem if isinstance(arg.type, OptionalType) else arg.type
    if isinstance(inner, BaseType) and inner.name == "ScalarType" and type(value) is int:
        return dtype_from_code(value)
    return value


def _renamed(const: object, renames: dict[str, str]) -> object:
    if isinstance(const, str):
        return renames.get(const, const)
    if isinstance(const, tuple):
        return tuple(_renamed(c, renames) for c in const)
    return const


def compile_call(site: CallSite, *, method: bool) -> Callable[..., Any]:
    """The call function for ``site``; ``method=True`` adds a leading instance parameter.

    The function is a compiled template with the schema's parameter names put
    in; its source is registered with linecache under ``<customop generated
    ns::op>`` so tracebacks and debuggers show it.
    """
    schema = site.schema
    names = [arg.name for arg in schema.arguments]
    npos = site.npos
    fast = site.fast
    function = "__call__" if method else "call"
    filename = f"<customop generated {schema.name}>"
    template = _template(npos, len(names) - npos, fast, method)
    renames = {f"_co_a{i}": name for i, name in enumerate(names)}
    code = template.replace(
        co_varnames=tuple(renames.get(v, v) for v in template.co_varnames),
        # Keyword names of the kernel call (`kernel(x, alpha=alpha)`) are constants.
        co_consts=tuple(_renamed(c, renames) for c in template.co_consts),
        co_name=function,
        co_qualname=str(schema.name),  # Python's own binding errors name the op
        co_filename=filename,
    )
    namespace = {"_co_site": site, "_co_epoch": epoch, "_co_type": type, "_co_local": _local_get}
    defaults = [MISSING if a.default is None else python_default(a) for a in schema.arguments]
    fn = FunctionType(code, namespace, function, tuple(defaults[:npos]) or None)
    fn.__kwdefaults__ = dict(zip(names[npos:], defaults[npos:], strict=True)) or None
    # A 1-tuple is linecache's lazy entry: the source is rendered only if a
    # traceback or debugger asks for it.
    linecache.cache[filename] = (partial(_render, names, npos, fast, method, function),)
    return fn


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

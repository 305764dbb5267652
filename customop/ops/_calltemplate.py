"""The text and code objects of generated call functions (see `_callgen`).

One renderer for every call function, customop's own and those adapters
install (`Guard`). A call function's code depends on the schema only through
its `CallShape` (how many parameters, how many positional, which lists the
fast path checks, fast or not, ...) and its parameter names. Customop's own
shapes are compiled once, from the text rendered with placeholder names; each
set of names is put into a copy of it once (`named_code`), and ops with the
same parameters share that copy. An adapter's guarded code is rendered with
the op's names and compiled per op (through `_codegen.compile_function`).

A cache entry is ``[local keys, argument types..., kernel, aux, item types of
each list...]``: the argument types one slot each, or one tuple when the
shape is ``grouped``; ``aux`` is the adapter's (customop's is None).
"""

from __future__ import annotations

from types import CodeType
from typing import Final, NamedTuple

from customop.ops._codegen import compile_template

__all__ = ["CallShape", "Guard", "kernel_slot", "named_code", "render"]

# Beyond this many list arguments the item loops would nest too deep (CPython
# allows 20 nested blocks); such ops check every list with the tuple expression.
_MAX_LOOPED_LISTS: Final = 8
# Cache entries, newest first: a fast function tries each, then the slow path.
_ENTRIES: Final = ("_co_cache", "_co_older")


class CallShape(NamedTuple):
    """What a call function's code depends on, besides the parameter names."""

    nargs: int  # parameters
    npos: int  # of which positional
    lists: tuple[int, ...]  # lists whose item types the fast path compares
    fast: bool
    values: tuple[int, ...] = ()  # arguments the fast path also finds in a set (Literal)
    entries: int = 2  # cache entries the fast path tries
    grouped: bool = False  # argument types compared as one tuple
    method: bool = False  # a plain method: the call object comes first (`_co_self`)


class Guard(NamedTuple):
    """An adapter's additions to a call function (``customop.torch``'s eager path).

    ``prelude`` runs first (lines of the function body); after a cache entry
    matched, ``asks`` must all hold for ``run`` (lines; ``{kernel}`` is the
    cached kernel's call) to run, else ``otherwise`` is returned; ``miss``
    runs when no entry matched, before the slow path (a hand-over that must
    not pay for the slow path's frame).
    """

    prelude: tuple[str, ...] = ()
    asks: tuple[str, ...] = ()
    run: tuple[str, ...] = ("return {kernel}",)
    otherwise: str = ""
    miss: tuple[str, ...] = ()


_PLAIN: Final = Guard()


def kernel_slot(shape: CallShape) -> int:
    """The index of the kernel in a cache entry of ``shape``.

    Args:
        shape: the call shape.

    Returns:
        The index; the adapter's ``aux`` value follows it.
    """
    return 2 if shape.grouped else shape.nargs + 1


def render(names: list[str] | None, shape: CallShape, guard: Guard = _PLAIN) -> str:
    """The text of ``def __call__``: with the schema's names, or ``*args, **kwargs``
    (``names`` None, for schemas whose names cannot be Python parameters)."""
    first = ["_co_self"] if shape.method else []
    prelude = "".join(f"    {line}\n" for line in guard.prelude)
    if names is None:
        head = f"def __call__({', '.join([*first, '*args', '**kwargs'])}):\n"
        return head + prelude + "    return _co_site.generic(args, kwargs)\n"
    npos = shape.npos
    # Every parameter has a default (the schema's, or the MISSING sentinel), and
    # surplus positionals and unknown keywords are collected, so a missing,
    # surplus or unknown argument reaches the slow path, which explains it
    # against the schema. On the fast path MISSING costs nothing: its type never
    # matches a cached argument type.
    # NOTE: the **_co_unknown dict costs ~25 ns per call (CPython allocates it
    # even when empty); the fast path pays for it by not reading the epoch
    # token: the epoch clock empties filled caches when it advances instead.
    params = [*first, *names[:npos], "*_co_extra", *names[npos:], "**_co_unknown"]
    values = ", ".join(names) + "," if names else ""
    head = f"def __call__({', '.join(params)}):\n" + prelude
    miss = "".join(f"    {line}\n" for line in guard.miss)
    slow = miss + f"    return _co_site.slow(({values}), _co_extra, _co_unknown)\n"
    if not shape.fast:
        return head + slow
    call_args = names[:npos] + [f"{name}={name}" for name in names[npos:]]
    kernel = f"_co_c[{kernel_slot(shape)}]({', '.join(call_args)})"
    call = _guarded(guard, kernel)
    first_list = kernel_slot(shape) + 2  # the entry's item types of the first list
    lists = [(first_list + j, names[i]) for j, i in enumerate(shape.lists)]
    # The same checks for each entry: only the global read into `_co_c` differs.
    checks = f"    if {' and '.join(_scalar_tests(names, shape))}:\n" + "".join(
        _list_checks(lists, call)
    )
    body = "".join(f"    _co_c = {entry}\n{checks}" for entry in _ENTRIES[: shape.entries])
    return head + body + slow


def _guarded(guard: Guard, kernel: str) -> list[str]:
    """The lines that run once an entry matched: the kernel, behind the guard's asks."""
    run = [line.format(kernel=kernel) for line in guard.run]
    if not guard.asks:
        return run
    asks = "\n        and ".join(guard.asks)
    return [f"if ({asks}):", *(f"    {line}" for line in run), guard.otherwise]


def _scalar_tests(names: list[str], shape: CallShape) -> list[str]:
    """What one identity test per argument proves: no surplus, the local keys, types."""
    # The cached local keys: first against the state's default (one attribute),
    # which only holds while no context anywhere has other keys; else read ours.
    local = "(_co_c[0] is _co_state.default or _co_c[0] is _co_local())"
    tests = ["not _co_extra", "not _co_unknown", local]
    if shape.grouped:
        types = ", ".join(f"_co_type({name})" for name in names)
        tests.append(f"({types},) == _co_c[1]")
    else:
        tests += [f"_co_type({name}) is _co_c[{i + 1}]" for i, name in enumerate(names)]
    # After its type matched a cached (hashable) one: Literal choices as a set.
    tests += [f"{names[i]} in _co_v{i}" for i in shape.values]
    return tests


def _list_checks(lists: list[tuple[int, str]], call: list[str]) -> list[str]:
    """The item checks of the list arguments, then the kernel call.

    The entry holds a list's one item type when its items share it (the common
    case: a loop of identity tests, ~15 ns per item, with no setup), else the
    tuple of its item types (compared as a tuple, after the loops failed).
    """
    indent = " " * 8
    if not lists:
        return _lines(call, indent)
    # After the list's own type matched: it is a list or tuple, so iterating is safe.
    exprs = [
        f"(_co_count(_co_map(_co_type, {name}), _co_c[{k}]) == _co_len({name}) != 0"
        f" or _co_tuple(_co_map(_co_type, {name})) == _co_c[{k}])"
        for k, name in lists
    ]
    lines = []
    if len(lists) <= _MAX_LOOPED_LISTS:
        # type() as a local: LOAD_FAST in the loop is ~3 ns per item cheaper than a global.
        lines = [f"{indent}_co_ty = _co_type\n", *_item_loops(lists, call, indent)]
    lines.append(f"{indent}if {' and '.join(exprs)}:\n")
    lines += _lines(call, indent + "    ")
    return lines


def _lines(call: list[str], indent: str) -> list[str]:
    return [f"{indent}{line}\n" for line in call if line]


def _item_loops(lists: list[tuple[int, str]], call: list[str], indent: str) -> list[str]:
    if not lists:
        return _lines(call, indent)
    (k, name), rest = lists[0], lists[1:]
    # An empty list matches only an entry made by an empty list: ().
    return [
        f"{indent}_co_t = _co_c[{k}]\n",
        f"{indent}for _co_i in {name}:\n",
        f"{indent}    if _co_ty(_co_i) is not _co_t:\n",
        f"{indent}        break\n",
        f"{indent}else:\n",
        f"{indent}    if {name} or _co_t == ():\n",
        *_item_loops(rest, call, indent + " " * 8),
    ]


# Compiled templates by shape: compile() costs ~40 µs, renaming the parameters
# of a compiled template (CodeType.replace) ~1.5 µs.
_TEMPLATES: dict[CallShape, CodeType] = {}


def _template(shape: CallShape) -> CodeType:
    code = _TEMPLATES.get(shape)
    if code is None:
        placeholders = [f"_co_a{i}" for i in range(shape.nargs)]
        code = _TEMPLATES[shape] = compile_template(render(placeholders, shape))
    return code


def _renamed(const: object, renames: dict[str, str]) -> object:
    if isinstance(const, str):
        return renames.get(const, const)
    if isinstance(const, tuple):
        return tuple(_renamed(c, renames) for c in const)
    return const


# Templates with an op's parameter names put in, and their source lines, by
# shape and names: ops with the same parameters share them (bounded: cleared
# when full, like the inference memos).
_NAMED: dict[tuple[CallShape, tuple[str, ...]], tuple[CodeType, list[str]]] = {}
_NAMED_LIMIT: Final = 4096


def named_code(shape: CallShape, names: tuple[str, ...]) -> tuple[CodeType, list[str]]:
    """The shape's code with ``names`` for its parameters, and its source lines."""
    found = _NAMED.get((shape, names))
    if found is None:
        template = _template(shape)
        renames = {f"_co_a{i}": name for i, name in enumerate(names)}
        code = template.replace(
            co_varnames=tuple(renames.get(v, v) for v in template.co_varnames),
            # Keyword names of the kernel call (`kernel(x, alpha=alpha)`) are constants.
            co_consts=tuple(_renamed(c, renames) for c in template.co_consts),
            co_name="__call__",
        )
        lines = render(list(names), shape).splitlines(keepends=True)
        if len(_NAMED) >= _NAMED_LIMIT:
            _NAMED.clear()
        found = _NAMED[(shape, names)] = (code, lines)
    return found

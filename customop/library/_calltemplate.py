"""The text and code objects of generated call functions (see `_callgen`).

A call function's code depends on the schema only through its shape (how many
parameters, how many positional, which lists the fast path checks, fast or
not) and its parameter names. Each shape is compiled once, from its rendered
text with placeholder names; each set of names is put into a copy of it
once (`named_code`), and ops with the same parameters share that copy.
"""

from __future__ import annotations

from types import CodeType
from typing import Final, NamedTuple

__all__ = ["Shape", "named_code"]

# A fast function tries the newest cache entry, then the one before, then the slow path.
_ENTRIES: Final = ("_co_cache", "_co_older")

# Beyond this many list arguments the item loops would nest too deep (CPython
# allows 20 nested blocks); such ops check every list with the tuple expression.
_MAX_LOOPED_LISTS: Final = 8


class Shape(NamedTuple):
    """What a call function's code depends on, besides the parameter names."""

    nargs: int  # parameters
    npos: int  # of which positional
    lists: tuple[int, ...]  # lists whose item types the fast path compares
    fast: bool
    values: tuple[int, ...] = ()  # arguments the fast path also finds in a set (Literal)


# Compiled templates by shape: compile() costs ~40 µs, renaming the parameters
# of a compiled template (CodeType.replace) ~1.5 µs.
_TEMPLATES: dict[Shape, CodeType] = {}


def _render(names: list[str], shape: Shape, function: str) -> str:
    npos = shape.npos
    # Every parameter has a default (the schema's, or the MISSING sentinel), and
    # surplus positionals and unknown keywords are collected, so a missing,
    # surplus or unknown argument reaches `CallSite.slow`, which explains it
    # against the schema. On the fast path MISSING costs nothing: its type never
    # matches a cached argument type.
    # NOTE: the **_co_unknown dict costs ~25 ns per call (CPython allocates it
    # even when empty); the fast path pays for it by not reading the epoch
    # token: the epoch clock empties filled caches when it advances instead.
    params = [*names[:npos], "*_co_extra", *names[npos:], "**_co_unknown"]
    values = ", ".join(names) + "," if names else ""
    head = f"def {function}({', '.join(params)}):\n"
    slow = f"    return _co_site.slow(({values}), _co_extra, _co_unknown)\n"
    if not shape.fast:
        return head + slow
    call_args = names[:npos] + [f"{name}={name}" for name in names[npos:]]
    call = f"return _co_c[{len(names) + 1}]({', '.join(call_args)})"
    first = len(names) + 2  # the entry's item types of the first list
    lists = [(first + j, names[i]) for j, i in enumerate(shape.lists)]
    # The same checks for each entry: only the global read into `_co_c` differs.
    checks = f"    if {' and '.join(_scalar_tests(names, shape))}:\n" + "".join(
        _list_checks(lists, call)
    )
    body = "".join(f"    _co_c = {entry}\n{checks}" for entry in _ENTRIES)
    return head + body + slow


def _scalar_tests(names: list[str], shape: Shape) -> list[str]:
    """What one identity test per argument proves: no surplus, the local keys, types."""
    # The cached local keys: first against the state's default (one attribute),
    # which only holds while no context anywhere has other keys; else read ours.
    local = "(_co_c[0] is _co_state.default or _co_c[0] is _co_local())"
    tests = ["not _co_extra", "not _co_unknown", local]
    tests += [f"_co_type({name}) is _co_c[{i + 1}]" for i, name in enumerate(names)]
    # After its type matched a cached (hashable) one: Literal choices as a set.
    tests += [f"{names[i]} in _co_v{i}" for i in shape.values]
    return tests


def _list_checks(lists: list[tuple[int, str]], call: str) -> list[str]:
    """The item checks of the list arguments, then the kernel call.

    The entry holds a list's one item type when its items share it (the common
    case: a loop of identity tests, ~15 ns per item, with no setup), else the
    tuple of its item types (compared as a tuple, after the loops failed).
    """
    indent = " " * 8
    if not lists:
        return [f"{indent}{call}\n"]
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
    lines.append(f"{indent}    {call}\n")
    return lines


def _item_loops(lists: list[tuple[int, str]], call: str, indent: str) -> list[str]:
    if not lists:
        return [f"{indent}{call}\n"]
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


def _template(shape: Shape) -> CodeType:
    code = _TEMPLATES.get(shape)
    if code is None:
        placeholders = [f"_co_a{i}" for i in range(shape.nargs)]
        module = compile(_render(placeholders, shape, "_co_f"), "<customop>", "exec")
        code = next(c for c in module.co_consts if isinstance(c, CodeType))
        _TEMPLATES[shape] = code
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
_NAMED: dict[tuple[Shape, tuple[str, ...]], tuple[CodeType, list[str]]] = {}
_NAMED_LIMIT: Final = 4096


def named_code(shape: Shape, names: tuple[str, ...]) -> tuple[CodeType, list[str]]:
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
        lines = _render(list(names), shape, "__call__").splitlines(keepends=True)
        if len(_NAMED) >= _NAMED_LIMIT:
            _NAMED.clear()
        found = _NAMED[(shape, names)] = (code, lines)
    return found

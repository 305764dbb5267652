"""Recursive-descent parsing of schema types, alias annotations and defaults.

This is the general path; `_parser` first tries a one-regex fast path per
argument and comes here for anything it does not recognise, so every error
message is produced here, with the caret in the right place.
"""

from __future__ import annotations

import re

from customop.schema._base import build
from customop.schema._lexer import MAX_DEPTH, Cursor
from customop.schema._type_names import type_name_problem
from customop.schema._types import (
    BASE_TYPE_NAMES,
    AliasInfo,
    BaseType,
    ClassType,
    DictType,
    FutureType,
    ListType,
    OptionalType,
    SchemaType,
    TupleType,
    UnionType,
    VarType,
    suggest_type_name,
)

__all__ = ["parse_type", "type_name_problem"]


#: C++ and Python spellings users write by habit: why they are wrong, and what to write.
_WRAPPERS = frozenset({"Future", "Await", "RRef"})
_SIZE = re.compile(r"\d+")


_ALIAS_FORMS = "Alias annotations look like (a), (a!), (a|b) or (a -> *)."


def _alias_sets(cur: Cursor) -> tuple[str, ...]:
    sets = []
    while True:
        sets.append("*" if cur.accept("*") else cur.ident("an alias set name", _ALIAS_FORMS))
        if not cur.accept("|"):
            return tuple(sets)


def parse_alias(cur: Cursor) -> AliasInfo | None:
    """``(a)``, ``(a!)``, ``(a! -> a|b)``, ``(*)`` or the bare ``!``; None if absent."""
    if cur.accept("!"):
        return build(AliasInfo, {"before": (), "after": (), "is_write": True})
    if not cur.accept("("):
        return None
    if cur.peek() == ")":
        cur.fail(
            "empty alias annotation '()'",
            "An alias annotation names an alias set, like Tensor(a) or Tensor(a!). "
            "Name the set, or remove the '()'.",
            at=cur.pos - 1,
        )
    before = _alias_sets(cur)
    is_write = cur.accept("!")
    if is_write and cur.peek() == "!":
        cur.fail(
            "'!' written twice in an alias annotation",
            "One '!' marks the value as written to, like Tensor(a!). Remove the second '!'.",
        )
    after = _alias_sets(cur) if cur.accept("->") else before
    if not cur.accept(")"):
        cur.expected("')' to close the alias annotation", _ALIAS_FORMS)
    return build(AliasInfo, {"before": before, "after": after, "is_write": is_write})


def _type_list(cur: Cursor, what: str, form: str) -> tuple[SchemaType, ...]:
    items = [parse_type(cur)]
    while cur.accept(","):
        items.append(parse_type(cur))
    if not cur.accept(")"):
        cur.expected(f"',' or ')' in {what}", f"Write {form}.")
    return tuple(items)


def _unknown_type(cur: Cursor, name: str, start: int) -> None:
    """Fail for a name that is no type; return when it is a type variable."""
    if cur.peek() == "." and not cur.text.startswith("...", cur.pos):
        while cur.accept("."):
            name += "." + cur.ident("a name after '.'")
        last = name.rsplit(".", 1)[1]
        meant = last if last in BASE_TYPE_NAMES else suggest_type_name(last)
        fix = f"Write {meant!r}." if meant else "Only __torch__ class names have dots."
        cur.fail(
            f"unknown type specifier {name!r}",
            f"Schema types have no module prefix. {fix}",
            at=start,
        )
    problem = type_name_problem(name)
    if problem is not None:
        cur.fail(f"unknown type specifier {name!r}", problem, at=start)


def _named_type(cur: Cursor, name: str, start: int) -> SchemaType:
    if name == "Dict":
        dict_help = "A Dict names its key and value types, like Dict(str, Tensor)."
        if not cur.accept("("):
            cur.expected("'(' after 'Dict'", dict_help)
        key = parse_type(cur)
        if not cur.accept(","):
            cur.expected("',' and the value type of the Dict", dict_help)
        value = parse_type(cur)
        if not cur.accept(")"):
            cur.expected("')' to close Dict(", dict_help)
        alias = parse_alias(cur)
        return build(DictType, {"kind": "dict", "key": key, "value": value, "alias": alias})
    if name in _WRAPPERS:
        if not cur.accept("("):
            cur.expected(f"'(' after {name!r}", f"Write {name}(T), like {name}(Tensor).")
        elem = parse_type(cur)
        if not cur.accept(")"):
            cur.expected(f"')' to close {name}(", f"Write {name}(T), like {name}(Tensor).")
        return build(FutureType, {"kind": "future", "wrapper": name, "elem": elem})
    if name == "Union" and cur.peek() == "(":
        cur.accept("(")
        elems = _type_list(cur, "the Union", "Union(A, B), like Union(int, str)")
        if len(elems) < 2:
            cur.fail(
                f"Union({elems[0]}) has only one member type",
                f"A Union chooses between two or more types. Write {str(elems[0])!r} "
                "itself, or add members, like Union(int, str).",
                at=start,
            )
        return build(UnionType, {"kind": "union", "elems": elems, "alias": parse_alias(cur)})
    if name == "__torch__":
        while cur.accept("."):
            name += "." + cur.ident("a class name")
        if name.count(".") < 1:
            cur.expected("'.' in a __torch__ class name", "Write __torch__.torch.classes.ns.Name.")
        return build(ClassType, {"kind": "class", "qualified_name": name})
    if name == "None":
        name = "NoneType"
    if name in BASE_TYPE_NAMES:
        return build(BaseType, {"kind": "base", "name": name, "alias": parse_alias(cur)})
    _unknown_type(cur, name, start)
    return build(VarType, {"kind": "var", "name": name, "alias": parse_alias(cur)})


def _height(tp: SchemaType) -> int:
    """How many levels deep ``tp`` nests (iteratively: the tree may be deep)."""
    height, stack = 0, [(tp, 1)]
    while stack:
        node, level = stack.pop()
        height = max(height, level)
        # Fields live in __dict__; hasattr on a missing one goes through pydantic's
        # __getattr__ and an AttributeError (slow, and this runs per parsed type).
        fields = node.__dict__
        children = [fields[f] for f in ("elem", "key", "value") if f in fields]
        children += fields.get("elems", ())
        stack.extend((child, level + 1) for child in children)
    return height


def parse_type(cur: Cursor) -> SchemaType:
    """A full type with its postfix ``?``, ``[]``, ``[N]`` and list alias annotations.

    Types nest at most `MAX_DEPTH` levels, so that printing, validating and
    JSON (whose parser stops at 200 levels) never hit a recursion limit.
    """
    cur.skip()
    start = cur.pos
    if cur.depth >= MAX_DEPTH:
        cur.fail(f"the type nests more than {MAX_DEPTH} levels deep", "Simplify the type.")
    cur.depth += 1
    try:
        tp = _postfix(cur, _base_type(cur, start))
    finally:
        cur.depth -= 1
    # Postfix chains (`T[][]...`) deepen a type without recursion: check the whole
    # tree once, at the top, and only when its text is long enough to be deep.
    if cur.depth == 0 and cur.pos - start > MAX_DEPTH and _height(tp) > MAX_DEPTH:
        cur.fail(
            f"the type nests more than {MAX_DEPTH} levels deep", "Simplify the type.", at=start
        )
    return tp


def _base_type(cur: Cursor, start: int) -> SchemaType:
    if cur.accept("("):
        elems = (
            ()
            if cur.accept(")")
            else _type_list(cur, "the tuple type", "(A, B), like (Tensor, int)")
        )
        return build(TupleType, {"kind": "tuple", "elems": elems})
    help_text = "A list of T is written 'T[]', like 'int[]'." if cur.peek() == "[" else ""
    return _named_type(cur, cur.ident("a type", help_text), start)


def _postfix(cur: Cursor, tp: SchemaType) -> SchemaType:
    # Each '?' or '[]' wraps one level more: stop at the limit as the chain is read,
    # not after building a chain of any length.
    levels = cur.depth
    while True:
        levels += 1
        if levels > MAX_DEPTH and cur.peek() in ("?", "["):
            cur.fail(f"the type nests more than {MAX_DEPTH} levels deep", "Simplify the type.")
        if cur.accept("?"):
            tp = build(OptionalType, {"kind": "optional", "elem": tp})
        elif cur.accept("["):
            found = cur.match(_SIZE)
            if found is not None and len(found.group()) > 18:
                cur.fail(
                    "the list size is too large",
                    "A fixed list size is a small whole number, like int[2].",
                    at=found.start(),
                )
            if not cur.accept("]"):
                cur.expected(
                    "a size or ']' in the list type",
                    "List types are written T[] or T[N] with N >= 0, like int[2].",
                )
            size = int(found.group()) if found else None
            alias = parse_alias(cur)
            tp = build(ListType, {"kind": "list", "elem": tp, "size": size, "alias": alias})
        else:
            return tp

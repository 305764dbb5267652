"""Nested arguments and outputs (tuples, lists, dicts, named tuples) as flat leaves.

``in_dims`` and ``out_dims`` follow ``torch.func.vmap``: each is a *prefix*
of the structure it describes, so an int (or None) stands for every leaf
below it, and a container must match the value's container (same type,
length and keys). ``None`` values are empty containers, as in torch's pytree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NoReturn, final

__all__ = ["Tree", "broadcast", "flatten", "unflatten"]


@final
class Tree:
    """The shape of a nested value: a leaf, or a container of subtrees."""

    __slots__ = ("children", "keys", "kind")

    def __init__(self, kind: type | None, keys: tuple[Any, ...], children: tuple[Tree, ...]):
        self.kind = kind  # None: a leaf
        self.keys = keys
        self.children = children

    @property
    def leaves(self) -> int:
        """How many leaves are below (1 for a leaf)."""
        return 1 if self.kind is None else sum(child.leaves for child in self.children)


_LEAF: Final = Tree(None, (), ())


def _is_namedtuple(value: object) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def flatten(value: Any) -> tuple[list[Any], Tree]:
    """The leaves of ``value`` in order, and its `Tree`."""
    leaves: list[Any] = []
    return leaves, _flatten(value, leaves)


def _flatten(value: Any, leaves: list[Any]) -> Tree:
    if value is None:
        return Tree(type(None), (), ())
    if isinstance(value, tuple | list):
        children = tuple(_flatten(item, leaves) for item in value)
        return Tree(type(value), (), children)
    if isinstance(value, dict):
        keys = tuple(value)
        return Tree(dict, keys, tuple(_flatten(value[key], leaves) for key in keys))
    leaves.append(value)
    return _LEAF


def unflatten(tree: Tree, leaves: list[Any]) -> Any:
    """The value of structure ``tree`` with ``leaves`` in its leaves' places."""
    found = iter(leaves)
    return _build(tree, found)


def _build(tree: Tree, leaves: Any) -> Any:
    if tree.kind is None:
        return next(leaves)
    if tree.kind is type(None):
        return None
    items = [_build(child, leaves) for child in tree.children]
    if tree.kind is dict:
        return dict(zip(tree.keys, items, strict=True))
    if tree.kind is list:
        return items
    if tree.kind is tuple:
        return tuple(items)
    return tree.kind(*items)  # a named tuple


def broadcast(prefix: Any, tree: Tree, what: str, fail: Callable[[str], NoReturn]) -> list[Any]:
    """One entry of ``prefix`` per leaf of ``tree``: ints and None stand for whole subtrees."""
    found: list[Any] = []
    _broadcast(prefix, tree, what, fail, found)
    return found


def _broadcast(
    prefix: Any, tree: Tree, where: str, fail: Callable[[str], NoReturn], found: list[Any]
) -> None:
    if prefix is None or (isinstance(prefix, int) and not isinstance(prefix, bool)):
        found.extend([prefix] * tree.leaves)
        return
    if tree.kind is None or tree.kind is type(None):
        fail(f"{where} is {prefix!r}, but the value there is not a container")
    same_kind = type(prefix) is tree.kind or (
        isinstance(prefix, tuple) and issubclass(tree.kind, tuple) and not _is_namedtuple(prefix)
    )
    if not same_kind:
        fail(f"{where} is a {type(prefix).__name__}, but the value there is a {tree.kind.__name__}")
    if tree.kind is dict:
        if set(prefix) != set(tree.keys):
            fail(f"{where} has the keys {sorted(map(str, prefix))}, the value {list(tree.keys)}")
        for key, child in zip(tree.keys, tree.children, strict=True):
            _broadcast(prefix[key], child, f"{where}[{key!r}]", fail, found)
        return
    if len(prefix) != len(tree.children):
        fail(f"{where} has {len(prefix)} entries, the value {len(tree.children)}")
    for index, (item, child) in enumerate(zip(prefix, tree.children, strict=True)):
        _broadcast(item, child, f"{where}[{index}]", fail, found)

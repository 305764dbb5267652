"""What the ports of PyTorch's custom-op tests share: torch's assertion methods.

The ported tests (``test_port_*.py``) keep torch's assertions as torch wrote
them (``self.assertEqual``, ``self.assertRaisesRegex``, ...); this mixin gives
them those methods with torch's meaning, on pytest. The code around the
assertions is ported by docs/migration.md: ``torch.library.X`` is
``customop.X``, ``torch.ops.<ns>`` is ``customop.ops.<ns>``, ``_scoped_library``
is ``customop.Library`` as a context manager, ``lib._destroy()`` is
``lib.close()``, ``f._opoverload`` is ``f.op`` and ``._schema`` is ``.schema``;
torch's fixed test namespaces are a fresh one per test (``ns``).

Each ported test runs on customop alone and bridged (``customop.torch.register``
of the namespace first, the order that was broken), unless it needs torch's
own machinery (FakeTensorMode, torch.compile, meta tensors, torch.ops), which
only a bridged op reaches.
"""

from __future__ import annotations

import re
import unittest
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

__all__ = ["TorchAsserts"]

_unit = unittest.TestCase()


def _same(actual: Any, expected: Any) -> bool:
    """torch's ``TestCase.assertEqual`` meaning: tensors close, sequences item by item."""
    if isinstance(actual, torch.Tensor) or isinstance(expected, torch.Tensor):
        try:
            torch.testing.assert_close(
                torch.as_tensor(actual), torch.as_tensor(expected), check_dtype=False
            )
        except (AssertionError, TypeError, ValueError, RuntimeError):
            return False
        return True
    sequences = (list, tuple, torch.Size)
    if isinstance(actual, sequences) and isinstance(expected, sequences):
        return len(actual) == len(expected) and all(
            _same(a, e) for a, e in zip(actual, expected, strict=True)
        )
    return bool(actual == expected)


class TorchAsserts:
    """The assertion methods of torch's ``TestCase``, for ported test classes."""

    def assertEqual(self, actual: Any, expected: Any, msg: object = None) -> None:
        assert _same(actual, expected), msg or f"{actual!r} != {expected!r}"

    def assertNotEqual(self, actual: Any, expected: Any, msg: object = None) -> None:
        assert not _same(actual, expected), msg or f"{actual!r} == {expected!r}"

    def assertTrue(self, value: object, msg: object = None) -> None:
        assert value, msg

    def assertFalse(self, value: object, msg: object = None) -> None:
        assert not value, msg

    def assertIs(self, a: object, b: object, msg: object = None) -> None:
        assert a is b, msg

    def assertIsNot(self, a: object, b: object, msg: object = None) -> None:
        assert a is not b, msg

    def assertIsNone(self, a: object, msg: object = None) -> None:
        assert a is None, msg

    def assertIsNotNone(self, a: object, msg: object = None) -> None:
        assert a is not None, msg

    def assertIn(self, a: object, b: Any, msg: object = None) -> None:
        assert a in b, msg

    def assertNotIn(self, a: object, b: Any, msg: object = None) -> None:
        assert a not in b, msg

    def assertIsInstance(self, a: object, cls: type | tuple[type, ...], msg: object = None) -> None:
        assert isinstance(a, cls), msg

    def assertGreater(self, a: Any, b: Any, msg: object = None) -> None:
        assert a > b, msg

    def assertExpectedInline(self, actual: str, expected: str) -> None:
        assert actual == expected, f"{actual!r}\n!=\n{expected!r}"

    def assertRaises(self, error: type[BaseException]) -> Any:
        return _unit.assertRaises(error)

    def assertRaisesRegex(self, error: type[BaseException], regex: str) -> Any:
        return _unit.assertRaisesRegex(error, regex)

    @contextmanager
    def assertWarnsRegex(self, category: type[Warning], regex: str) -> Iterator[None]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        found = [w for w in caught if issubclass(w.category, category)]
        assert any(re.search(regex, str(w.message)) for w in found), [
            str(w.message) for w in caught
        ]

    def assertLogs(self, logger: str) -> Any:
        return _unit.assertLogs(logger)

    def fail(self, msg: str) -> None:
        raise AssertionError(msg)


def tensors_in(values: Sequence[Any]) -> list[torch.Tensor]:
    """The tensors of a flat sequence with lists in it (torch's pytree, for versions)."""
    found: list[torch.Tensor] = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, list | tuple):
            found += tensors_in(value)
    return found

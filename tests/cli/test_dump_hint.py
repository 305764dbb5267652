"""``customop dump --op NAME`` without ``--module``: the error suggests ``--module``."""

from __future__ import annotations

import argparse

import pytest

from customop.cli._inspect import run_dump
from customop.exceptions import UnknownOperatorError


def _args(op: str, module: list[str]) -> argparse.Namespace:
    return argparse.Namespace(op=op, key=None, module=module, library=[])


def test_an_unknown_op_without_module_suggests_module() -> None:
    with pytest.raises(UnknownOperatorError) as caught:
        run_dump(_args("nowhere::op", []))
    assert str(caught.value) == (
        "dump: operator 'nowhere::op' is not registered, and no --module was given. dump sees "
        "the ops of the modules it imports, and customop registers none by itself. Add "
        "--module MOD, the module that defines it: customop dump --op nowhere::op --module "
        "mypkg.ops."
    )
    assert caught.value.op == "nowhere::op"


def test_with_a_module_the_dispatchers_own_error_stands() -> None:
    with pytest.raises(UnknownOperatorError) as caught:
        run_dump(_args("nowhere::op", ["json"]))
    assert "--module" not in str(caught.value)

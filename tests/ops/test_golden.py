"""The rendered text of each call shape, pinned (attrs' golden tests of generated code).

A change to the generated fast path shows here as a diff of readable code.
Regenerate after a deliberate change with ``CUSTOMOP_REGOLD=1 pytest tests/ops/test_golden.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from customop.ops import CallShape, Guard, render

GOLDEN = Path(__file__).parent / "golden"

TORCH_LIKE = Guard(
    prelude=("if _co_dynamo():", "    return _co_op(x, w, alpha=alpha)"),
    asks=("not _co_htf(x)", "not _co_dstack()"),
    run=("_co_r = {kernel}", "_co_bump((w,))", "return _co_r"),
    otherwise="return _co_op(x, w, alpha=alpha)",
)

CASES: dict[str, tuple[list[str] | None, CallShape, Guard]] = {
    "two_tensors": (["x", "y"], CallShape(2, 2, (), True), Guard()),
    "keyword_only": (["x", "alpha"], CallShape(2, 1, (), True), Guard()),
    "a_list": (["xs", "dim"], CallShape(2, 2, (0,), True), Guard()),
    "literal_choice": (["x", "mode"], CallShape(2, 2, (), True, (1,)), Guard()),
    "slow_only": (["x", "pair"], CallShape(2, 2, (), False), Guard()),
    "no_arguments": ([], CallShape(0, 0, (), True), Guard()),
    "adapter_guard": (
        ["x", "w", "alpha"],
        CallShape(3, 2, (), True, (), 1, False, True),
        TORCH_LIKE,
    ),
    "adapter_grouped": (
        ["x", "w", "alpha"],
        CallShape(3, 2, (), True, (), 1, True, True),
        TORCH_LIKE,
    ),
    "adapter_generic": (
        None,
        CallShape(0, 0, (), False, (), 1, False, True),
        Guard(
            prelude=("if _co_dynamo():", "    return _co_op(*args, **kwargs)"),
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES), ids=sorted(CASES))
def test_rendered_call_code_matches_its_golden_file(name: str) -> None:
    names, shape, guard = CASES[name]
    text = render(names, shape, guard)
    compile(text, f"<golden {name}>", "exec")  # the text is real Python
    path = GOLDEN / f"{name}.py.txt"
    if os.environ.get("CUSTOMOP_REGOLD"):
        path.write_text(text)
    assert text == path.read_text()

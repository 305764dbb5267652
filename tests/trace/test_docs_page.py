"""docs/tracing.md: each rendered ```mermaid block shows exactly the text printed above it.

tests/test_docs.py runs the page's python blocks and checks their ```text
output; this test ties the rendered diagram to that checked output.
"""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).parents[2] / "docs" / "tracing.md"
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def test_rendered_mermaid_matches_the_printed_text() -> None:
    blocks = [(m.group(1), m.group(2)) for m in FENCE.finditer(PAGE.read_text())]
    mermaid = [i for i, (language, _) in enumerate(blocks) if language == "mermaid"]
    assert mermaid, "the page shows a rendered Mermaid diagram"
    for index in mermaid:
        printed = [code for language, code in blocks[:index] if language == "text"][-1]
        assert blocks[index][1] == printed

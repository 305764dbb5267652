"""Every examples/*.py runs as `python examples/X.py` would, and exits with 0.

Each example runs in a fresh interpreter from the repository root, so it sees
what a user who cloned the repository sees. An example that needs an optional
package says so in a comment line, ``# requires: torch`` (several names may
follow, separated by commas or spaces); it is skipped when one is missing.
An example that takes more than a few seconds says why in a ``# slow: ...``
comment line, which marks its run ``slow``.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
REQUIRES = re.compile(r"^#\s*requires:\s*(.+)$", re.MULTILINE)
SLOW = re.compile(r"^#\s*slow:", re.MULTILINE)


def _missing(path: Path) -> list[str]:
    """The packages the example declares with `# requires:` that are not installed."""
    names = [
        name for line in REQUIRES.findall(path.read_text()) for name in re.split(r"[,\s]+", line)
    ]
    return [name for name in names if name and importlib.util.find_spec(name) is None]


def test_examples_exist() -> None:
    assert EXAMPLES, "examples/ has no *.py files"


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(path, marks=[pytest.mark.slow] if SLOW.search(path.read_text()) else [])
        for path in EXAMPLES
    ],
    ids=lambda p: p.name,
)
def test_example_runs(path: Path) -> None:
    missing = _missing(path)
    if missing:
        pytest.skip(f"{path.name} requires {', '.join(missing)}")
    result = subprocess.run(
        [sys.executable, str(path.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, (
        f"python {path.relative_to(ROOT)} exited with {result.returncode}\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    )


def test_examples_readme_lists_every_example() -> None:
    readme = (ROOT / "examples" / "README.md").read_text()
    missing = [p.name for p in EXAMPLES if f"[`{p.name}`]({p.name})" not in readme]
    assert not missing, f"add a row for each to the table in examples/README.md: {missing}"

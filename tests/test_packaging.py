"""What a user sees of the package before reading code: licence, index page, changelog."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import customop

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the stdlib from Python 3.11")
ROOT = Path(__file__).parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_licence_file_matches_pyproject() -> None:
    assert PYPROJECT["license"] == {"text": "BSD-3-Clause"}
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License\n")
    assert "Neither the name of the copyright holder nor the names of its" in text


def _long_description() -> str:
    readme = PYPROJECT["readme"]
    return (ROOT / readme["file"]).read_text()


def test_index_page_text_reads_well_off_the_repository() -> None:
    text = _long_description()
    assert "pip install -e" not in text, "an index page has no checkout to install from"
    links = re.findall(r"\]\(([^)]+)\)", text)
    relative = [link for link in links if not link.startswith(("https://", "http://", "#"))]
    assert not relative, f"relative links break on a package index: {relative}"
    assert PYPROJECT["readme"]["content-type"] == "text/markdown"


def test_changelog_has_this_release_and_the_next() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in text
    release = re.escape(customop.__version__)
    assert re.search(rf"^## \[{release}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.MULTILINE)
    assert PYPROJECT["version"] == customop.__version__


def test_supported_pythons_are_stated() -> None:
    classifiers = PYPROJECT["classifiers"]
    readme = (ROOT / "README.md").read_text()
    for minor in range(10, 14):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    assert "Python 3.10, 3.11, 3.12 and 3.13" in readme
    assert PYPROJECT["requires-python"] == ">=3.10"


@pytest.mark.parametrize("key", ["repo_url", "repo_name", "edit_uri"])
def test_docs_point_nowhere_false(key: str) -> None:
    # No public home yet: a repository link would point at someone else's.
    assert not re.search(rf"^{key}:", (ROOT / "mkdocs.yml").read_text(), re.M)


def test_readme_links_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text()
    pages = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md"))
    pages = [p for p in pages if not p.startswith("docs/reference/") or p.endswith("index.md")]
    missing = [p for p in pages if f"]({p})" not in readme and p != "docs/index.md"]
    assert not missing, f"link these from the README's Documentation section: {missing}"

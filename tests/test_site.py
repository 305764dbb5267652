"""The built docs site, as a reader sees it in a real browser (headless Chromium).

``mkdocs build --strict`` accepts pages that render badly (a fence the
Markdown engine does not recognise turns the rest of a page inside out), so
this test builds the site, serves it on 127.0.0.1 and checks what Chromium
shows:

- no page shows a literal triple backtick in its text;
- every Mermaid block became an ``<svg>``, drawn at 0.8 of its natural width or
  more at the default page width (so its text stays readable), with mermaid
  served by the site itself;
- at a 1280 px window no code block overflows its box, the copy button covers
  no character of a block, no name in a table cell is broken across lines, and
  a "Returns:" table is one row;
- no page requests anything from another host (fonts included);
- search finds ``register_fake``;
- every API reference page loads and shows entries.

It needs Chromium (Debian's ``chromium`` package) and Playwright, and runs in
``.ci/run`` with ``CUSTOMOP_SITE_TEST=1``; there a missing browser is a
failure, not a skip. Other hosts are blocked with a resolver rule, so the test
proves the site works offline.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parent.parent
CHROMIUM = os.environ.get("CUSTOMOP_CHROMIUM", "/usr/bin/chromium")
ENABLED = os.environ.get("CUSTOMOP_SITE_TEST") == "1"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Every host but the local server fails to resolve: the site must work
    # offline. (Routing each request through Playwright stalls the search worker.)
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]

pytestmark = pytest.mark.skipif(
    not ENABLED,
    reason=(
        "set CUSTOMOP_SITE_TEST=1 to run the rendered-site test in headless Chromium "
        "(CUSTOMOP_CHROMIUM: the browser, default /usr/bin/chromium); .ci/run sets it"
    ),
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Build the site (or take CUSTOMOP_SITE_DIR, built already) and serve it; yields its URL."""
    prebuilt = os.environ.get("CUSTOMOP_SITE_DIR")
    out = Path(prebuilt) if prebuilt else tmp_path_factory.mktemp("site")
    if not prebuilt:
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(out)]
        subprocess.run(build, cwd=ROOT, env=env, check=True)
    handler = functools.partial(_QuietHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: install Debian's chromium package "
            "(apt-get install chromium), or set CUSTOMOP_CHROMIUM to its path"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield instance
        instance.close()


@pytest.fixture(scope="module")
def pages(site: str, browser: Any) -> Iterator[Any]:
    """One browser page at the default width, recording every URL it requests."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.requested = []
    page.on("request", lambda request: page.requested.append(request.url))
    yield page
    page.close()


def _site_pages() -> list[str]:
    """Site paths of every docs page, from the Markdown sources."""
    docs = ROOT / "docs"
    paths = []
    for md in sorted(docs.rglob("*.md")):
        rel = md.relative_to(docs).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "index" else rel.parts
        paths.append("".join(f"{part}/" for part in parts))
    return paths


def _markdown(path: str) -> str:
    docs = ROOT / "docs"
    md = docs / (path + "index.md") if (docs / (path + "index.md")).exists() else None
    return (md or docs / (path.rstrip("/") + ".md")).read_text()


def _mermaid_blocks(path: str) -> int:
    return len(re.findall(r"^```mermaid\s*$", _markdown(path), re.MULTILINE))


def _python_blocks(path: str) -> int:
    return len(re.findall(r"^```(python|text|\{\.python)", _markdown(path), re.MULTILINE))


def _open(page: Any, url: str) -> None:
    page.requested = []  # what this page asks for (see the `pages` fixture)
    page.goto(url, wait_until="load")
    page.wait_for_selector("article.md-content__inner")


def _outside(page: Any, site: str) -> list[str]:
    """Every URL the page requested from anywhere but the site (data: URLs are inline)."""
    return [u for u in page.requested if not u.startswith((site, "data:", "blob:"))]


def _mermaid_svgs(page: Any) -> list[dict[str, float]]:
    """Natural and drawn width of every Mermaid SVG, read through closed shadow roots.

    mkdocs-material renders each diagram into a closed shadow root, which page
    scripts cannot see; the DevTools protocol can, with shadow roots pierced.
    """
    session = page.context.new_cdp_session(page)
    try:
        root = session.send("DOM.getDocument", {"depth": -1, "pierce": True})["root"]
        found = []
        for host in _walk(root):
            if "mermaid" not in _attrs(host).get("class", "").split():
                continue
            for svg in _walk(host):
                if svg.get("nodeName", "").lower() == "svg":
                    view_box = _attrs(svg).get("viewBox", "0 0 0 0").split()
                    box = session.send("DOM.getBoxModel", {"backendNodeId": svg["backendNodeId"]})
                    found.append({"natural": float(view_box[2]), "drawn": box["model"]["width"]})
                    break
        return found
    finally:
        session.detach()


def _walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in [*node.get("shadowRoots", []), *node.get("children", [])]:
        yield from _walk(child)


def _attrs(node: dict[str, Any]) -> dict[str, str]:
    flat = node.get("attributes", [])
    return dict(zip(flat[::2], flat[1::2], strict=True))


@pytest.mark.parametrize("path", _site_pages(), ids=lambda p: p or "index")
def test_page_renders(pages: Any, site: str, path: str) -> None:
    _open(pages, site + path)
    text = pages.inner_text("article.md-content__inner")
    assert "```" not in text, f"{path}: a literal ``` in the text (a fence that did not parse)"
    if path.startswith("reference/"):  # the API reference: entries, or links to them
        entries = pages.locator("article .doc-heading, article a[href*='#customop.']").count()
        assert entries > 0, f"{path}: no API entries rendered"
    expected = _mermaid_blocks(path)
    if expected:
        pages.wait_for_function(
            f"document.querySelectorAll('div.mermaid').length >= {expected}", timeout=20_000
        )
        pages.wait_for_timeout(200)
        svgs = _mermaid_svgs(pages)
        for _ in range(50):  # rendering is asynchronous: wait for every shadow root to fill
            if len(svgs) >= expected:
                break
            pages.wait_for_timeout(100)
            svgs = _mermaid_svgs(pages)
        assert len(svgs) == expected, f"{path}: {expected} Mermaid blocks, {len(svgs)} drawn"
        for index, svg in enumerate(svgs):
            scale = svg["drawn"] / svg["natural"]
            assert scale >= 0.8, f"{path}: diagram {index} drawn at {scale:.2f}x its natural size"
    outside = _outside(pages, site)
    assert not outside, f"{path}: requests to other hosts (the site must work offline): {outside}"


#: Per code block: how far its text overflows the box, and the first character
#: the copy button covers; names broken inside table cells; Returns: tables' rows.
_LAYOUT_JS = """() => {
  const blocks = [];
  for (const pre of document.querySelectorAll('article pre')) {
    const code = pre.querySelector('code');
    if (!code) continue;
    let covered = null;
    const nav = pre.querySelector('.md-code__nav, .md-clipboard');
    if (nav) {
      const b = nav.getBoundingClientRect();
      const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
      const range = document.createRange();
      for (let n = walker.nextNode(); n && covered === null; n = walker.nextNode()) {
        for (let i = 0; i < n.length && covered === null; i++) {
          if (!n.data[i].trim()) continue;
          range.setStart(n, i); range.setEnd(n, i + 1);
          for (const r of range.getClientRects()) {
            if (r.right > b.left && r.left < b.right && r.bottom > b.top && r.top < b.bottom) {
              covered = n.data.slice(Math.max(0, i - 20), i + 1);
            }
          }
        }
      }
    }
    blocks.push({start: code.textContent.slice(0, 60),
                 overflow: code.scrollWidth - code.clientWidth, covered});
  }
  const broken = [...document.querySelectorAll('article td code, article th code')]
    .filter(c => /^[A-Za-z_][\\w.]*$/.test(c.textContent) && c.getClientRects().length > 1)
    .map(c => c.textContent);
  const returns = [...document.querySelectorAll('article .doc-section-title')]
    .filter(t => t.textContent.trim() === 'Returns:')
    .map(t => t.closest('p').nextElementSibling)  // the table, in Material's wrapper divs
    .filter(next => next && (next.tagName === 'TABLE' || next.querySelector('table')))
    .map(next => next.querySelectorAll('tbody tr').length);
  return {blocks, broken, returns};
}"""


@pytest.mark.parametrize("path", _site_pages(), ids=lambda p: p or "index")
def test_code_blocks_fit_and_the_copy_button_covers_no_text(
    pages: Any, site: str, path: str
) -> None:
    _open(pages, site + path)
    layout = pages.evaluate(_LAYOUT_JS)
    assert layout["blocks"] or "reference/" in path or not _python_blocks(path), path
    overflowing = [(b["start"], b["overflow"]) for b in layout["blocks"] if b["overflow"] > 0]
    assert not overflowing, f"{path}: code blocks wider than their box at 1280 px: {overflowing}"
    covered = [(b["start"], b["covered"]) for b in layout["blocks"] if b["covered"]]
    assert not covered, f"{path}: the copy button covers text of: {covered}"
    assert not layout["broken"], f"{path}: names broken across lines in tables: {layout['broken']}"
    split = [rows for rows in layout["returns"] if rows != 1]
    assert not split, f"{path}: Returns: tables with {split} rows (one value, one row)"


def test_mermaid_is_served_by_the_site(pages: Any, site: str) -> None:
    _open(pages, site + "concepts/dispatcher/")
    assert site + "assets/javascripts/mermaid.min.js" in pages.requested
    elsewhere = [u for u in pages.requested if "mermaid" in u and not u.startswith(site)]
    assert not elsewhere, f"mermaid fetched from elsewhere: {elsewhere}"


def test_search_finds_register_fake(pages: Any, site: str) -> None:
    _open(pages, site)
    pages.locator("input.md-search__input").click()
    # The search box reads the query on keyup: type it key by key.
    pages.keyboard.type("register_fake", delay=30)
    pages.wait_for_selector("li.md-search-result__item", timeout=20_000)
    results = pages.locator("li.md-search-result__item").count()
    assert results > 0

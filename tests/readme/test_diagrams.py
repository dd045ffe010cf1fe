"""Every Mermaid diagram of the docs renders with the real Mermaid, in Debian's chromium.

A forge renders a ```mermaid block with its own copy of Mermaid, often a major version behind, and
shows a syntax error instead of the diagram when the block does not parse. So each block is parsed
and rendered by both pinned versions (`mermaid10`: the last 10.x; `mermaid`: 11.x, in tests/node),
loaded into a blank page of the same chromium the browser tests drive. Fails, never skips, without
chromium or without `npm ci` in tests/node.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, sync_playwright

REPO = Path(__file__).resolve().parents[2]
MERMAID = {
    "10": REPO / "tests/node/node_modules/mermaid10/dist/mermaid.min.js",
    "11": REPO / "tests/node/node_modules/mermaid/dist/mermaid.min.js",
}
PAGES = sorted(
    [REPO / "README.md", REPO / "infra/README.md", *(REPO / "docs").glob("*.md"), *(REPO / "examples").rglob("*.md")]
)

RENDER = """async (text) => {
  mermaid.initialize({startOnLoad: false, securityLevel: "strict"});
  try {
    await mermaid.parse(text);
    const {svg} = await mermaid.render("diagram", text);
    return {svg};
  } catch (error) {
    return {error: String((error && error.message) || error)};
  }
}"""


def diagrams() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for page in PAGES:
        for n, block in enumerate(re.findall(r"^```mermaid\n(.*?)^```", page.read_text(), re.DOTALL | re.MULTILINE)):
            found.append((f"{page.relative_to(REPO)}#{n + 1}", block))
    return found


def chromium() -> str:
    for candidate in (os.environ.get("STEPLINE_CHROMIUM"), "/usr/lib/chromium/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail("rendering the docs' diagrams needs Debian's chromium (`bash .ci/install` installs it)", pytrace=False)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium(), args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        yield browser
        browser.close()


def render(browser: Browser, version: str, text: str) -> dict[str, Any]:
    library = MERMAID[version]
    if not library.is_file():
        pytest.fail(f"{library.relative_to(REPO)} is missing: run `npm ci` in tests/node", pytrace=False)
    page = browser.new_page()
    try:
        page.set_content("<!doctype html><html><body></body></html>")
        page.add_script_tag(path=str(library))
        return page.evaluate(RENDER, text)
    finally:
        page.close()


def test_the_readme_has_its_diagram_and_the_docs_theirs() -> None:
    names = [name for name, _ in diagrams()]
    assert "README.md#1" in names and "docs/architecture.md#2" in names


@pytest.mark.parametrize("version", sorted(MERMAID))
@pytest.mark.parametrize(("name", "text"), diagrams(), ids=[name for name, _ in diagrams()])
def test_each_diagram_parses_and_renders(browser: Browser, version: str, name: str, text: str) -> None:
    result = render(browser, version, text)
    assert "error" not in result, f"{name} does not render with Mermaid {version}: {result.get('error')}"
    assert result["svg"].startswith("<svg") and "Syntax error" not in result["svg"]


def test_a_broken_diagram_is_caught(browser: Browser) -> None:
    for version in MERMAID:
        result = render(browser, version, 'flowchart LR\n  a["open --> b\n')
        assert "Parse error" in result.get("error", ""), version

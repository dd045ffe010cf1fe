"""Browser tests: the built web UI (web/dist) in headless Chromium (Debian's `chromium`, driven by
Playwright for Python through `executable_path`; no Playwright browser download), against the real
dev server (the local runtime on moto) with a scripted model, behind a fault-injecting proxy.

Nothing here is skipped: without chromium or without the UI build the tests fail and say how to
get them (`bash .ci/install` installs both).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, expect, sync_playwright

from tests.browser.book import BOOK_SCRIPTS
from tests.browser.proxy import FaultProxy
from tests.support.server import Running, config, running, write_book

REPO = Path(__file__).resolve().parents[2]
DIST = REPO / "web" / "dist"
SCREENSHOTS = REPO / "docs" / "screenshots"
SCREENSHOTS_ENV = "STEPLINE_SCREENSHOTS"
VIEWPORT = {"width": 1000, "height": 700}

expect.set_options(timeout=10_000)  # a loaded 2-core machine: the UI follows a poll of 1.5 s


def chromium_path() -> str:
    for candidate in (os.environ.get("STEPLINE_CHROMIUM"), "/usr/lib/chromium/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail(
        "the browser tests need Debian's chromium (apt-get install -y chromium; `bash .ci/install` does it as root),"
        " or STEPLINE_CHROMIUM=/path/to/chromium",
        pytrace=False,
    )


# Package scope: Playwright's sync API keeps an event loop running in this thread while it is open,
# and the rest of the suite calls asyncio.run(); it is closed when the browser tests are done.
@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not (DIST / "index.html").is_file():
        pytest.fail("the web UI is not built: run `bash .ci/install` (npm ci && npm run build in web/)", pytrace=False)
    executable = chromium_path()
    browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox", "--disable-dev-shm-usage"])
    yield browser
    browser.close()


def screenshot(page: Page, name: str) -> Path | None:
    """Write docs/screenshots/NAME.png, only when STEPLINE_SCREENSHOTS=1: the files are tracked, and a
    run that rewrote them would leave every checkout with changes. Returns the path written."""
    if os.environ.get(SCREENSHOTS_ENV) != "1":
        return None
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


@dataclass
class Stack:
    server: Running
    proxy: FaultProxy


def make_stack(tmp: Path, **env: str) -> Iterator[Stack]:
    model = write_book(tmp / "book.json", BOOK_SCRIPTS["scripts"], BOOK_SCRIPTS["fallback"])
    with running(config(model, tokens=None, **env)) as server:
        port = int(server.url.rsplit(":", 1)[1])
        proxy = FaultProxy(("127.0.0.1", port))
        try:
            yield Stack(server, proxy)
        finally:
            proxy.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from make_stack(tmp_path_factory.mktemp("browser"))


@pytest.fixture(scope="module")
def expiring_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from make_stack(tmp_path_factory.mktemp("expiring"), STEPLINE_APPROVAL_TIMEOUT_SECONDS="2")


@dataclass
class Console:
    """Console errors and page errors; each test names the ones it expects."""

    messages: list[str] = field(default_factory=list[str])

    def add(self, message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            self.messages.append(f"{message.type}: {message.text}")

    def unexpected(self, *allowed: str) -> list[str]:
        return [m for m in self.messages if not any(re.search(a, m) for a in allowed)]

    def matching(self, pattern: str) -> list[str]:
        return [m for m in self.messages if re.search(pattern, m)]


@dataclass
class Ui:
    page: Page
    console: Console
    stack: Stack

    def open(self, path: str = "/") -> None:
        self.page.goto(self.stack.proxy.url + path)
        self.page.get_by_test_id("composer-input").wait_for()

    def send(self, text: str) -> None:
        box = self.page.get_by_test_id("composer-input")
        box.fill(text)
        box.press("Enter")

    @property
    def chat_id(self) -> str:
        return str(self.page.get_by_test_id("chat").get_attribute("data-chat-id"))

    def stored(self, chat_id: str | None = None) -> dict[str, Any]:
        with self.stack.server.client() as http:
            return http.get(f"/api/conversations/{chat_id or self.chat_id}").json()

    def screenshot(self, name: str) -> None:
        screenshot(self.page, name)


def make_ui(browser: Browser, stack: Stack, viewport: dict[str, int] | None = None) -> Iterator[Ui]:
    context = browser.new_context(viewport=viewport or VIEWPORT)  # type: ignore[arg-type]
    page = context.new_page()
    page.set_default_timeout(15_000)
    console = Console()
    page.on("console", console.add)
    page.on("pageerror", lambda error: console.messages.append(f"pageerror: {error}"))
    # No request may leave the page's origin (no CDN, no web font). The page's own blob: URLs and
    # what Chromium's built-in PDF viewer loads from itself (chrome://, chrome-extension://) stay local.
    outside: list[str] = []
    local = (stack.proxy.url, "data:", f"blob:{stack.proxy.url}", "chrome://", "chrome-extension://")
    page.on("request", lambda r: None if r.url.startswith(local) else outside.append(r.url))
    stack.proxy.faults.__init__()  # type: ignore[misc]
    stack.proxy.requests.clear()  # each test reads the requests of its own page
    yield Ui(page, console, stack)
    context.close()
    assert outside == [], f"requests outside the page's origin: {outside}"


@pytest.fixture
def ui(browser: Browser, stack: Stack) -> Iterator[Ui]:
    yield from make_ui(browser, stack)

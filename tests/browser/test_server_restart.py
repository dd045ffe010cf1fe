"""The server restarts under an open page: a real `stepline dev` process (as in tests/restart),
stopped with SIGTERM and started again on its data folder, behind the fault proxy (whose upstream
then points at the new process). The page says the server cannot be reached while it is down, and
recovers by itself once it is back (no reload): it follows the run again and reloads the list."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.book import BOOK_SCRIPTS
from tests.browser.conftest import DIST, Stack, Ui, make_ui
from tests.browser.proxy import FaultProxy
from tests.browser.test_chat_ui import (
    RESOURCE_ERROR,
    answer_text,
    assert_clean_console,
    assert_settled,
    last_assistant,
    stored_text,
    trace,
)
from tests.restart.process import DevProcess, start_dev
from tests.support.server import Running, write_book

# What the page logs while the server is down: Chromium's failed requests and the UI's own network errors.
DOWN = (RESOURCE_ERROR, r"\[stepline-ui\] (network|refresh) error", r"net::ERR_")


@dataclass
class Restartable:
    """A `stepline dev` process behind the proxy, which can be stopped and started again on its data."""

    data: Path
    work: Path
    model: str
    running: Running
    proxy: FaultProxy
    dev: DevProcess | None = None

    def start(self) -> None:
        self.dev = start_dev(
            self.data,
            self.work,
            journal=self.work / "journal.txt",
            model=self.model,
            extra_env={"STEPLINE_WEB_DIST": str(DIST)},
        )
        address = urlsplit(self.dev.url)
        self.proxy.upstream = (str(address.hostname), int(address.port or 80))
        self.running.url = self.dev.url

    def stop(self) -> None:
        assert self.dev is not None
        self.dev.stop(signal.SIGTERM)
        self.dev = None


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[Restartable]:
    model = write_book(tmp_path / "book.json", BOOK_SCRIPTS["scripts"], BOOK_SCRIPTS["fallback"])
    proxy = FaultProxy(("127.0.0.1", 9))  # pointed at the process once it runs
    server = Restartable(tmp_path / "data", tmp_path, model, Running("", cast(Any, None)), proxy)
    server.start()
    try:
        yield server
    finally:
        if server.dev is not None:
            server.dev.stop(signal.SIGKILL)
        proxy.close()


@pytest.fixture
def page_ui(browser: Browser, restartable: Restartable) -> Iterator[Ui]:
    yield from make_ui(browser, Stack(restartable.running, restartable.proxy))


def talk_tokens(ui: Ui) -> list[str]:
    return answer_text(ui).split()


def test_an_open_page_recovers_by_itself_when_the_server_is_back(page_ui: Ui, restartable: Restartable) -> None:
    ui = page_ui
    ui.open()
    ui.page.evaluate("window.__sameDocument = true")  # gone if the page were reloaded
    ui.send("keep talking")  # streams for minutes: working across the restart
    expect(ui.page.get_by_test_id("streaming-cursor")).to_have_count(1, timeout=30_000)
    item = ui.page.locator(f"[data-conversation-id='{ui.chat_id}']")
    expect(item).to_have_attribute("data-indicator", "running")

    restartable.stop()
    # Down: the page says the server cannot be reached (not that the run goes on there).
    chat = ui.page.get_by_test_id("chat")
    expect(chat).to_have_attribute("data-connection", "unreachable", timeout=20_000)
    banner = ui.page.get_by_test_id("connection-banner")
    expect(banner).to_contain_text("The server cannot be reached")
    expect(banner).not_to_contain_text("goes on on the server")
    expect(ui.page.get_by_test_id("list-error")).to_contain_text("cannot be reached")

    restartable.start()
    # Back: no reload, no click; the stream is followed again and the list read again.
    expect(chat).to_have_attribute("data-connection", "ok", timeout=40_000)
    expect(banner).to_have_count(0)
    expect(ui.page.get_by_test_id("list-error")).to_have_count(0)
    expect(item).to_have_attribute("data-indicator", "running")
    expect(trace(ui)).to_have_attribute("data-trace-state", "running")
    expect(ui.page.get_by_test_id("streaming-cursor")).to_have_count(1)
    assert ui.page.evaluate("window.__sameDocument === true"), "the page was reloaded"
    seen = len(talk_tokens(ui))
    ui.page.wait_for_function(
        "([n]) => [...document.querySelectorAll('[data-testid=final-answer]')].at(-1).innerText.split(/\\s+/)"
        ".filter(Boolean).length > n",
        arg=[seen],
        timeout=30_000,
    )

    ui.page.get_by_test_id("stop").click()
    assert_settled(ui, "incomplete")
    # Every token once, in order: the step redone after the restart replaced the cut one, not added to it.
    tokens = talk_tokens(ui)
    assert tokens == [f"talk{i}" for i in range(len(tokens))], tokens[:50]
    assert answer_text(ui).strip() == stored_text(ui.stored()).strip()
    expect(ui.page.get_by_test_id("assistant-message")).to_have_count(1)
    expect(last_assistant(ui).get_by_test_id("message-error")).to_have_count(0)
    assert_clean_console(ui, *DOWN)


def test_a_decision_made_while_the_server_is_down_is_offered_again_and_taken_once_it_is_back(
    page_ui: Ui, restartable: Restartable
) -> None:
    ui = page_ui
    ui.open()
    ui.send("write a note")
    card = last_assistant(ui).get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-approval-state", "requested")
    restartable.stop()
    card.get_by_role("button", name="Approve").click()
    # It did not reach the server: the card asks again, and says so once; the page says why.
    failed = card.get_by_test_id("approval-failed")
    expect(failed).to_have_text(re.compile(r"^[^;]*did not reach the server[^;]*; try again\.$", re.IGNORECASE))
    expect(card).to_have_attribute("data-approval-state", "requested")
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-connection", "unreachable", timeout=20_000)
    restartable.start()
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-connection", "ok", timeout=40_000)
    card.get_by_role("button", name="Approve").click()
    assert_settled(ui)
    assert "The note is handled." in answer_text(ui)
    tool = next(p for p in ui.stored()["messages"][-1]["parts"] if p["type"] == "tool-write_file")
    assert tool["state"] == "output-available" and tool["approval"]["approved"] is True
    journal = (restartable.work / "journal.txt").read_text().splitlines()
    assert [line.split()[1] for line in journal] == ["write_file"]  # the approved tool ran once
    assert_clean_console(ui, *DOWN)

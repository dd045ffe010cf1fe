"""An approval nobody answers expires on the server, and the UI shows it (its own server: the
approval timeout is 2 s; one dev server at a time per process, moto's state is global)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import Stack, Ui, make_ui
from tests.browser.test_chat_ui import assert_clean_console, assert_settled, last_assistant, open_trace


@pytest.fixture
def expiring_ui(browser: Browser, expiring_stack: Stack) -> Iterator[Ui]:
    yield from make_ui(browser, expiring_stack)


def test_an_unanswered_approval_expires(expiring_ui: Ui) -> None:
    ui = expiring_ui
    ui.open()
    ui.send("write a note")
    card = last_assistant(ui).get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-approval-state", "requested")
    # Nobody answers: the server expires it (2 s), the run goes on with a denial; the UI follows.
    assert_settled(ui)
    open_trace(ui)
    expect(card).to_have_attribute("data-approval-state", "expired")
    expect(card.get_by_role("button", name="Approve")).to_have_count(0)
    expect(last_assistant(ui).get_by_test_id("tool-block")).to_have_attribute("data-tool-state", "output-denied")
    tool = [p for p in ui.stored()["messages"][-1]["parts"] if p["type"] == "tool-write_file"][0]
    assert tool["state"] == "output-denied" and tool["approval"]["reason"] == "approval expired"
    assert_clean_console(ui)

"""An approval nobody answers expires on the server, and the UI shows it; a decision that comes too
late (410) or for a conversation deleted meanwhile (404) says why (its own server: the approval
timeout is 2 s; one dev server at a time per process, moto's state is global)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Route, expect

from tests.browser.conftest import Stack, Ui, make_ui
from tests.browser.test_chat_ui import RESOURCE_ERROR, assert_clean_console, assert_settled, last_assistant, open_trace


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


def _idle_on_the_server(ui: Ui, chat_id: str) -> None:
    """Wait until the server expired the approval and finished the run (the page is not told)."""
    deadline = time.monotonic() + 20
    with ui.stack.server.client() as http:
        while http.get(f"/api/conversations/{chat_id}").json()["status"] != "idle":
            assert time.monotonic() < deadline, "the run did not end after the approval expired"
            time.sleep(0.1)


@pytest.mark.parametrize(("deleted", "view", "status"), [(False, "expired", 410), (True, "not-found", 404)])
def test_a_decision_the_server_can_no_longer_take_says_why(
    expiring_ui: Ui, deleted: bool, view: str, status: int
) -> None:
    ui = expiring_ui
    ui.open()
    held: list[Route] = []
    ui.page.route("**/api/conversations?*", lambda route: held.append(route))  # the page hears nothing new
    ui.send("write a note")
    card = last_assistant(ui).get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-approval-state", "requested")
    chat_id = ui.chat_id
    _idle_on_the_server(ui, chat_id)
    if deleted:
        with ui.stack.server.client() as http:
            assert http.delete(f"/api/conversations/{chat_id}").status_code == 204
    card.get_by_role("button", name="Approve").click()
    expect(card).to_have_attribute("data-approval-state", view)
    expect(card.get_by_role("button", name="Approve")).to_have_count(0)
    assert ("POST", "/api/chat", status) in ui.stack.proxy.requests
    assert_clean_console(ui, RESOURCE_ERROR)

"""An approval nobody answers expires on the server, and the UI shows it; a decision that comes
too late reads expired, never approved (its own server: the approval
timeout is 2 s; one dev server at a time per process, moto's state is global)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Route, expect

from tests.browser.conftest import Stack, Ui, make_ui
from tests.browser.test_approvals import assert_the_chat_goes_on, follow_the_wait_hearing_nothing
from tests.browser.test_chat_ui import (
    RESOURCE_ERROR,
    assert_clean_console,
    assert_settled,
    last_assistant,
    open_trace,
    trace,
)


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


def test_a_decision_that_comes_too_late_says_expired_never_approved(expiring_ui: Ui) -> None:
    ui = expiring_ui
    ui.open()
    ui.send("write a note")
    card = last_assistant(ui).get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-approval-state", "requested")
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "ready")
    chat_id = ui.chat_id
    # The page hears nothing new (its polls and a resume are held) while the server expires the
    # approval and ends the run; then the user approves: too late.
    held: list[Route] = []
    ui.page.route("**/api/conversations?*", lambda route: held.append(route))
    ui.page.route("**/api/chat/*/stream", lambda route: held.append(route))
    ui.page.reload()
    expect(card).to_have_attribute("data-approval-state", "requested")
    _idle_on_the_server(ui, chat_id)
    card.get_by_role("button", name="Approve").click()
    expect(trace(ui)).to_have_attribute("data-trace-state", "complete")  # the page read the stored turn again
    open_trace(ui)
    expect(card).to_have_attribute("data-approval-state", "expired")
    expect(card.get_by_role("button", name="Approve")).to_have_count(0)
    expect(trace(ui).get_by_test_id("trace-expired")).to_have_text("1 expired")
    decisions = [r for r in ui.stack.proxy.requests if r[1] == "/api/chat" or r[1].startswith("/api/approvals/")]
    assert len(decisions) == 2, decisions  # the send, then the late decision (answered with the rest of the run)
    assert_clean_console(ui, RESOURCE_ERROR)


def test_a_late_decision_through_the_webhook_reads_expired_and_the_chat_goes_on(expiring_ui: Ui) -> None:
    ui = expiring_ui
    release = follow_the_wait_hearing_nothing(ui, "write a note")
    try:
        card = last_assistant(ui).get_by_test_id("approval-card")
        approval = str(card.get_attribute("data-approval-id"))
        # The page follows the wait on a stream that hears nothing while the server expires the
        # approval and ends the run; then the user approves through the webhook: too late.
        _idle_on_the_server(ui, ui.chat_id)
        card.get_by_role("button", name="Approve").click()
        expect(card).to_have_attribute("data-approval-state", "expired")
        expect(card).to_contain_text("Expired: no decision in time")
        expect(last_assistant(ui).get_by_test_id("tool-status")).to_have_text("expired")  # not "approved"
        expect(card).to_contain_text(f"approval {approval} expired")  # the server's own words
        expect(card.get_by_role("button", name="Approve")).to_have_count(0)
        assert ("POST", f"/api/approvals/{approval}", 410) in ui.stack.proxy.requests
    finally:
        release.set()
    assert_settled(ui)
    expect(trace(ui).get_by_test_id("trace-expired")).to_have_text("1 expired")
    expect(trace(ui).get_by_test_id("trace-approved")).to_have_count(0)
    open_trace(ui)
    expect(card).to_have_attribute("data-approval-state", "expired")
    ui.screenshot("approval-expired")
    tool = [p for p in ui.stored()["messages"][-1]["parts"] if p["type"] == "tool-write_file"][0]
    assert tool["state"] == "output-denied" and tool["approval"]["reason"] == "approval expired"
    assert_the_chat_goes_on(ui)
    assert_clean_console(ui, RESOURCE_ERROR)

"""Approvals against the real server: two in one step decided while the stream that asked is still
open, and the card's answers when the server refuses a decision (404, 409, 410)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from stepline.api.identity import DEFAULT_LOCAL_USER
from tests.browser.conftest import Ui
from tests.browser.test_chat_ui import (
    RESOURCE_ERROR,
    answer_text,
    assert_clean_console,
    assert_settled,
    last_assistant,
    open_trace,
    trace,
)


def write_file_parts(ui: Ui) -> list[dict[str, Any]]:
    return [p for p in ui.stored()["messages"][-1]["parts"] if p["type"] == "tool-write_file"]


def run_log(ui: Ui, run_id: str) -> list[dict[str, Any]]:
    """Every chunk of the run's event log, from the store the server uses."""
    store = ui.stack.server.server.backend.services.store
    events = store.events_after(DEFAULT_LOCAL_USER, run_id, 0, now=int(time.time() * 1000))
    return [chunk for event in events for chunk in event.chunks]


@pytest.fixture
def slow_to_record(ui: Ui) -> Iterator[None]:
    """The step records its approvals a while after it streamed their requests (a loaded machine
    stretches that gap): a decision made at once reaches the server before the approval exists."""
    store: Any = ui.stack.server.server.backend.services.store
    record = store.request_approval

    def later(*args: Any, **kwargs: Any) -> Any:
        time.sleep(2)
        return record(*args, **kwargs)

    store.request_approval = later
    try:
        yield
    finally:
        del store.request_approval  # the store's own method again


def test_two_approvals_decided_while_the_stream_that_asked_is_still_open(ui: Ui) -> None:
    decide_the_first_while_the_stream_is_open(ui)
    decisions = [r for r in ui.stack.proxy.requests if r[0] == "POST" and r[1] != "/api/conversations"]
    assert [(r[1].split("/")[2], r[2]) for r in decisions] == [("chat", 200), ("approvals", 200), ("chat", 200)]
    assert_clean_console(ui)


@pytest.mark.usefixtures("slow_to_record")
def test_a_decision_that_reaches_the_server_before_the_approval_is_recorded_is_taken(ui: Ui) -> None:
    # Regression (it failed once under load): the webhook answered 404 for an approval the step had
    # streamed but not recorded yet, and the card read "no longer exists" for a live approval.
    # Here the step takes 2 s to record them.
    decide_the_first_while_the_stream_is_open(ui)
    decisions = [r for r in ui.stack.proxy.requests if r[0] == "POST" and r[1] != "/api/conversations"]
    assert [(r[1].split("/")[2], r[2]) for r in decisions] == [("chat", 200), ("approvals", 200), ("chat", 200)]
    # The page waited for the server to have recorded the approval (the run waiting) before deciding.
    webhook = next(i for i, r in enumerate(ui.stack.proxy.requests) if r[1].startswith("/api/approvals/"))
    assert ("GET", f"/api/conversations/{ui.chat_id}", 200) in ui.stack.proxy.requests[:webhook]
    assert_clean_console(ui)  # no 404 on the way


def decide_the_first_while_the_stream_is_open(ui: Ui) -> None:
    """Two approvals in one step: the first decided while the stream that asked is open, the second after it ended."""
    release = threading.Event()
    ui.stack.proxy.faults.hold_next_chat_end = release
    # The sidebar's polls are held: a stale one ("running") would make the page follow the run
    # again, and the second decision would take the webhook too (the other test's path).
    ui.page.route("**/api/conversations?*", lambda route: None)
    ui.open()
    ui.send("two approvals please")
    cards = last_assistant(ui).get_by_test_id("approval-card")
    expect(cards).to_have_count(2)
    expect(cards.nth(1)).to_have_attribute("data-approval-state", "requested")
    # The stream that asked is still open (its end is held): the first decision is made now.
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "streaming")
    cards.nth(0).get_by_role("button", name="Approve").click()
    # Taken by the server (the webhook answered 200), not merely sent: then the stream may end.
    expect(cards.nth(0)).to_have_attribute("data-approval-state", "approved")
    expect(trace(ui)).to_have_attribute("data-trace-state", "waiting")
    release.set()
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "ready")
    expect(cards.nth(1)).to_have_attribute("data-approval-state", "requested")
    cards.nth(1).get_by_placeholder("Reason (optional)").fill("not this one")
    cards.nth(1).get_by_role("button", name="Deny").click()
    assert_settled(ui)
    assert "Both decided." in answer_text(ui)
    expect(trace(ui).get_by_test_id("trace-approved")).to_have_text("1 approved")
    expect(trace(ui).get_by_test_id("trace-denied")).to_have_text("1 denied")
    open_trace(ui)
    expect(cards.nth(0)).to_have_attribute("data-approval-state", "approved")
    expect(cards.nth(1)).to_have_attribute("data-approval-state", "denied")
    tools = write_file_parts(ui)
    assert [t["state"] for t in tools] == ["output-available", "output-denied"]
    assert [t["approval"]["approved"] for t in tools] == [True, False]
    assert tools[1]["approval"].get("reason") == "not this one"
    # The run went on once: one decision each in its log, the approved tool ran once, one answer.
    stored = ui.stored()
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant"]
    chunks = run_log(ui, stored["messages"][-1]["runId"])
    responses = [c for c in chunks if c["type"] == "tool-approval-response"]
    assert sorted(str(c["approvalId"]) for c in responses) == sorted(t["approval"]["id"] for t in tools)
    assert [c["toolCallId"] for c in chunks if c["type"] == "tool-output-available"] == ["call-w1"]
    assert [c["toolCallId"] for c in chunks if c["type"] == "tool-output-denied"] == ["call-w2"]
    assert len([c for c in chunks if c["type"] == "finish"]) == 1
    assert answer_text(ui).count("Both decided.") == 1
    # The first decision went to the webhook (a stream was open), the second with the continuation:
    # the callers check the requests.


def test_two_approvals_both_decided_before_the_stream_that_asked_ends(ui: Ui) -> None:
    release = threading.Event()
    ui.stack.proxy.faults.hold_next_chat_end = release
    ui.page.route("**/api/conversations?*", lambda route: None)  # as above: no stale poll
    ui.open()
    ui.send("two approvals please")
    cards = last_assistant(ui).get_by_test_id("approval-card")
    expect(cards.nth(1)).to_have_attribute("data-approval-state", "requested")
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "streaming")
    try:
        cards.nth(0).get_by_role("button", name="Deny").click()
        expect(cards.nth(0)).to_have_attribute("data-approval-state", "denied")
        cards.nth(1).get_by_role("button", name="Approve").click()
        expect(cards.nth(1)).to_have_attribute("data-approval-state", "approved")
    finally:
        release.set()
    # Both went to the webhook; at the stream's end the SDK's message has both decisions, so it
    # sends the continuation once, which streams the rest of the run (no second run, no re-decision).
    assert_settled(ui)
    assert answer_text(ui).count("Both decided.") == 1
    tools = write_file_parts(ui)
    assert [t["state"] for t in tools] == ["output-denied", "output-available"]
    chunks = run_log(ui, ui.stored()["messages"][-1]["runId"])
    assert len([c for c in chunks if c["type"] == "tool-approval-response"]) == 2
    assert [c["toolCallId"] for c in chunks if c["type"] == "tool-output-available"] == ["call-w2"]
    posts = [(r[1].split("/")[2], r[2]) for r in ui.stack.proxy.requests if r[0] == "POST"]
    assert posts == [("chat", 200), ("approvals", 200), ("approvals", 200), ("chat", 200)]
    assert_clean_console(ui)


def test_two_approvals_decided_while_following_the_wait_after_a_reload(ui: Ui) -> None:
    ui.open()
    ui.send("two approvals please")
    cards = last_assistant(ui).get_by_test_id("approval-card")
    expect(cards.nth(1)).to_have_attribute("data-approval-state", "requested")
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "ready")
    ui.page.reload()
    # The resume stream follows the run through its wait: both decisions go to the webhook.
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "streaming")
    expect(cards.nth(1)).to_have_attribute("data-approval-state", "requested")
    cards.nth(0).get_by_role("button", name="Deny").click()
    expect(cards.nth(0)).to_have_attribute("data-approval-state", "denied")
    expect(trace(ui)).to_have_attribute("data-trace-state", "waiting")  # one of two: the run still waits
    cards.nth(1).get_by_role("button", name="Approve").click()
    assert_settled(ui)
    assert answer_text(ui).count("Both decided.") == 1
    tools = write_file_parts(ui)
    assert [t["state"] for t in tools] == ["output-denied", "output-available"]
    chunks = run_log(ui, ui.stored()["messages"][-1]["runId"])
    assert len([c for c in chunks if c["type"] == "tool-approval-response"]) == 2
    assert [c["toolCallId"] for c in chunks if c["type"] == "tool-output-available"] == ["call-w2"]
    posts = [(r[1].split("/")[2], r[2]) for r in ui.stack.proxy.requests if r[0] == "POST"]
    assert posts == [("chat", 200), ("approvals", 200), ("approvals", 200)], "no continuation besides the webhook"
    assert_clean_console(ui)


def test_a_typed_reason_survives_the_card_mounting_again(ui: Ui) -> None:
    # Regression: the reason lived in the card, and a resume's full replay (a stale sidebar poll,
    # coming back to the chat) rebuilds the message, so the decision went out without it.
    ui.open()
    ui.send("write a note")
    card = last_assistant(ui).get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-approval-state", "requested")
    first = ui.chat_id
    card.get_by_placeholder("Reason (optional)").fill("checked the path")
    ui.page.get_by_test_id("new-chat").click()
    expect(ui.page.get_by_test_id("assistant-message")).to_have_count(0)
    ui.page.locator(f"[data-conversation-id='{first}'] button.conversation").click()
    expect(card).to_have_attribute("data-approval-state", "requested")
    expect(card.get_by_placeholder("Reason (optional)")).to_have_value("checked the path")
    card.get_by_role("button", name="Approve").click()
    assert_settled(ui)
    tool = write_file_parts(ui)[0]
    assert tool["approval"]["approved"] is True and tool["approval"].get("reason") == "checked the path"
    assert_clean_console(ui)


# -- the server refuses the page's decision -----------------------------------------------------------


def follow_the_wait_hearing_nothing(ui: Ui, prompt: str) -> threading.Event:
    """Send, reload, and follow the run's wait on a resume stream that then stays silent until released."""
    ui.open()
    ui.send(prompt)
    card = last_assistant(ui).get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-approval-state", "requested")
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "ready")
    release = threading.Event()
    ui.stack.proxy.faults.stall_next_resume = release
    ui.page.reload()
    expect(card).to_have_attribute("data-approval-state", "requested")
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "streaming")
    return release


def assert_the_chat_goes_on(ui: Ui) -> None:
    """The next message is answered as usual: the refusal broke nothing."""
    ui.send("hello there")
    expect(ui.page.get_by_test_id("assistant-message")).to_have_count(2)
    assert_settled(ui)
    assert "Hello from the script" in answer_text(ui)


def test_a_decision_another_tab_made_first_reads_already_decided_through_the_webhook(ui: Ui) -> None:
    release = follow_the_wait_hearing_nothing(ui, "write a note")
    try:
        card = last_assistant(ui).get_by_test_id("approval-card")
        approval = str(card.get_attribute("data-approval-id"))
        with ui.stack.server.client() as http:  # another tab, or the API, denies it first
            assert http.post(f"/api/approvals/{approval}", json={"approved": False}).status_code == 200
        card.get_by_role("button", name="Approve").click()
        expect(card).to_have_attribute("data-approval-state", "conflict")
        expect(card).to_contain_text("Already decided the other way")
        expect(last_assistant(ui).get_by_test_id("tool-status")).to_have_text("decided elsewhere")  # not "approved"
        expect(card).to_contain_text(f"approval {approval} was already denied")  # the server's own words
        expect(card.get_by_role("button", name="Approve")).to_have_count(0)
        assert ("POST", f"/api/approvals/{approval}", 409) in ui.stack.proxy.requests
        ui.screenshot("approval-conflict")
    finally:
        release.set()
    # The stream the page follows carries the run on with the other tab's denial.
    assert_settled(ui)
    open_trace(ui)
    expect(last_assistant(ui).get_by_test_id("tool-block")).to_have_attribute("data-tool-state", "output-denied")
    # The collapsed trace counts the server's outcome (the other tab's denial), not the page's approve.
    expect(trace(ui).get_by_test_id("trace-approved")).to_have_count(0)
    expect(trace(ui).get_by_test_id("trace-denied")).to_have_text("1 denied")
    tool = write_file_parts(ui)[0]
    assert tool["state"] == "output-denied" and tool["approval"]["approved"] is False
    assert_the_chat_goes_on(ui)
    assert_clean_console(ui, RESOURCE_ERROR)

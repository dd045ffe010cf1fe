"""A scheduled run's owner in the browser: the conversation in the sidebar, watched live, its approval
answered, then continued by chatting (its own dev server: the agent with the schedule,
`tests.browser.scheduled_agents`; one dev server at a time per process, moto's state is global).

The occurrence is fired as the scheduler fires it (`POST /api/dev/schedules/.../runs`, the same
`fire_occurrence`); its run holds in its first tool until the page has found it at work.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.browser import scheduled_agents
from tests.browser.conftest import Stack, Ui, make_stack, make_ui
from tests.browser.test_chat_ui import answer_text, assert_clean_console, assert_settled, last_assistant, trace

OCCURRENCE = {"scheduledAt": "2031-01-15T01:00:00Z"}  # 02:00 in Paris


@pytest.fixture(scope="module")
def scheduled_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from make_stack(tmp_path_factory.mktemp("scheduled"), STEPLINE_AGENT="tests.browser.scheduled_agents:AGENTS")


@pytest.fixture
def owner(browser: Browser, scheduled_stack: Stack) -> Iterator[Ui]:
    scheduled_agents.GATHERING.clear()
    scheduled_agents.RELEASE.clear()
    scheduled_agents.PUBLISHED.clear()
    try:
        yield from make_ui(browser, scheduled_stack)
    finally:
        scheduled_agents.RELEASE.set()  # never leave the run's tool holding


def test_the_owner_opens_the_scheduled_run_watches_it_approves_and_continues_it(owner: Ui) -> None:
    ui = owner
    with ui.stack.server.client() as http:
        fired = http.post("/api/dev/schedules/reports/nightly/runs", json=OCCURRENCE)
    assert fired.status_code == 202, fired.text
    conversation_id, run_id = fired.json()["conversationId"], fired.json()["runId"]
    assert scheduled_agents.GATHERING.wait(30)  # the run is at work, held in its first tool

    # The owner opens the UI: the scheduled conversation is in the sidebar, running.
    ui.open()
    entry = ui.page.locator(f"[data-conversation-id='{conversation_id}']")
    expect(entry).to_contain_text(scheduled_agents.TITLE)
    expect(entry).to_have_attribute("data-indicator", "running")
    entry.locator("button.conversation").click()
    chat = ui.page.get_by_test_id("chat")
    expect(chat).to_have_attribute("data-chat-id", conversation_id)
    expect(ui.page.get_by_test_id("user-message")).to_have_text("Write the nightly report.")

    # Watched live: the text so far and the tool at work, the page following the run's stream.
    expect(chat).to_have_attribute("data-chat-status", "streaming")
    expect(trace(ui)).to_have_attribute("data-trace-state", "running")
    expect(last_assistant(ui)).to_contain_text("Gathering the numbers.")
    expect(last_assistant(ui).get_by_test_id("tool-block").first).to_have_attribute(
        "data-tool-state", "input-available"
    )
    scheduled_agents.RELEASE.set()

    # The run asks its owner: the approval arrives on the open page and is answered there.
    card = last_assistant(ui).get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-approval-state", "requested")
    expect(entry).to_have_attribute("data-indicator", "waiting")
    ui.screenshot("scheduled-run")
    card.get_by_role("button", name="Approve").click()
    assert_settled(ui)
    assert scheduled_agents.ANSWER in answer_text(ui)
    assert scheduled_agents.PUBLISHED == ["Nightly"]  # the approved tool ran once

    # Continued by chatting: the next turn is the owner's, in the same conversation.
    ui.send("And what happens tomorrow?")
    assert_settled(ui)
    assert scheduled_agents.FOLLOW_UP_ANSWER in answer_text(ui)
    expect(chat).to_have_attribute("data-chat-id", conversation_id)
    expect(entry).to_have_attribute("data-indicator", "none")
    stored = ui.stored(conversation_id)
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant", "user", "assistant"]
    assert stored["title"] == scheduled_agents.TITLE
    with ui.stack.server.client() as http:
        scheduled = http.get(f"/api/runs/{run_id}").json()
        follow_up = http.get(f"/api/runs/{stored['messages'][3]['runId']}").json()
    assert (scheduled["trigger"], scheduled["status"]) == ("schedule", "completed")
    assert scheduled["metadata"]["scheduledAt"] == OCCURRENCE["scheduledAt"]
    assert (follow_up["trigger"], follow_up["status"]) == ("web", "completed")
    assert scheduled_agents.PUBLISHED == ["Nightly"]
    assert_clean_console(ui)

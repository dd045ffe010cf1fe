"""A sub-agent call in the chat: a nested, collapsible trace headed with the agent's name.

Its own server (the deployment serves `tests.support.deep_agents:AGENTS`: the research desk's lead,
the default, and a chief three agents deep; one dev server at a time per process: moto's state is
global).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, expect

from stepline.api.identity import DEFAULT_LOCAL_USER
from stepline.runtime.child_results import child_run_id
from tests.browser.conftest import Stack, Ui, make_stack, make_ui
from tests.browser.test_chat_ui import answer_text, assert_clean_console, assert_settled, last_assistant, open_trace
from tests.support.desk_agents import FINDINGS


@pytest.fixture(scope="module")
def deep_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from make_stack(Path(tmp_path_factory.mktemp("deep")), STEPLINE_AGENT="tests.support.deep_agents:AGENTS")


@pytest.fixture
def deep_ui(browser: Browser, deep_stack: Stack) -> Iterator[Ui]:
    yield from make_ui(browser, deep_stack)


def block(scope: Locator, agent: str, depth: int = 0) -> Locator:
    return scope.locator(f'[data-testid="sub-agent-block"][data-agent="{agent}"][data-depth="{depth}"]')


def raised_cards(ui: Ui) -> Locator:
    """The approval cards of the conversation's own message (a sub-agent's request, raised there)."""
    return last_assistant(ui).locator('[data-tool-call-id^="sub-approval-"] [data-testid="approval-card"]')


def expand(blocks: Locator) -> None:
    """Open every sub-agent block (outermost first: a nested one is visible once its parent is open)."""
    for index in range(blocks.count()):
        summary = blocks.nth(index).locator("> details > summary")
        if blocks.nth(index).locator("> details").get_attribute("open") is None:
            summary.click()
        expect(blocks.nth(index).locator("> details")).to_have_attribute("open", "")


def view(ui: Ui, count: int) -> list[dict[str, Any]]:
    """What the `count` sub-agent blocks show, all open: agent, state, depth, header, text, in page order."""
    blocks = last_assistant(ui).get_by_test_id("sub-agent-block")
    expect(blocks).to_have_count(count)  # a nested one is there once its parent's message is
    for index in range(count):  # an ended child shows its run's stored message, once read
        expect(blocks.nth(index)).to_have_attribute("data-source", "stored")
    expand(blocks)
    return [
        {
            "agent": b.get_attribute("data-agent"),
            "state": b.get_attribute("data-state"),
            "depth": b.get_attribute("data-depth"),
            "name": b.get_by_test_id("sub-agent-name").first.inner_text(),
            "status": b.get_by_test_id("sub-agent-status").first.inner_text(),
            "body": b.get_by_test_id("sub-agent-body").first.inner_text(),
        }
        for b in blocks.all()
    ]


def test_the_lead_shows_its_researcher_and_writer_as_nested_traces_and_the_writers_approval(deep_ui: Ui) -> None:
    ui = deep_ui
    ui.open()
    ui.send("a brief on otters")
    message = last_assistant(ui)
    researcher, writer = block(message, "researcher"), block(message, "writer")
    # While the lead works: both blocks, named; the writer waits for the person's approval.
    expect(writer).to_have_attribute("data-state", "approval", timeout=20_000)
    expect(researcher.get_by_test_id("sub-agent-name")).to_have_text("researcher")
    expect(writer.get_by_test_id("sub-agent-name")).to_have_text("writer")
    expect(writer.get_by_test_id("sub-agent-status")).to_have_text("waiting for approval")
    # The writer's own trace: its save, asking (decided in the conversation's card, not here).
    save = writer.locator('[data-testid="tool-block"][data-tool-name="save_brief"]')
    expect(save).to_have_attribute("data-tool-state", "approval-requested")
    expect(save.get_by_test_id("approval-decided-above")).to_be_visible()
    expect(save.get_by_role("button", name="Approve")).to_have_count(0)
    # The request raised into the lead's message: the usual card, saying who asks.
    card = raised_cards(ui)
    expect(card).to_have_count(1)
    expect(card.get_by_test_id("approval-asked-by")).to_have_text("· asked by the writer")
    expect(message.locator('[data-testid="tool-block"][data-tool-call-id^="sub-approval-"]')).to_contain_text(
        "save_brief"
    )
    expect(researcher).to_have_attribute("data-state", "done")  # the researcher does not wait for anyone
    ui.screenshot("sub-agents")
    # A reload while the writer waits: the same blocks (the stream's replay has the children's
    # progress), the same card; the decision then goes through the webhook (the page follows the wait).
    ui.page.reload()
    expect(writer).to_have_attribute("data-state", "approval")
    expect(researcher).to_have_attribute("data-state", "done")
    expect(save.get_by_test_id("approval-decided-above")).to_be_visible()
    expect(card.get_by_test_id("approval-asked-by")).to_have_text("· asked by the writer")
    card.get_by_role("button", name="Approve").click()
    assert_settled(ui)
    assert answer_text(ui) == "Your brief is saved."
    open_trace(ui)
    expect(researcher).to_have_attribute("data-state", "done")
    expect(writer).to_have_attribute("data-state", "done")
    live = view(ui, 2)
    assert [(v["agent"], v["state"], v["depth"], v["status"]) for v in live] == [
        ("researcher", "done", "0", "done"),
        ("writer", "done", "0", "done"),
    ]
    assert "Otters use rocks as tools." in live[0]["body"]  # the researcher's own answer, in its trace
    assert "Saved." in live[1]["body"]
    expect(save).to_have_attribute("data-tool-state", "output-available")  # ran, inside the writer
    expect(save.get_by_test_id("approval-card")).to_have_attribute("data-approval-state", "approved")
    # Decided once, run once, nothing left waiting.
    stored = ui.stored()
    writer_run = child_run_id(stored["messages"][-1]["metadata"]["runId"], "w1")
    store = ui.stack.server.server.backend.services.store
    assert [c.status for c in store.list_tool_calls(DEFAULT_LOCAL_USER, writer_run) if c.tool_name == "save_brief"] == [
        "success"
    ]
    assert list(store.pending_approvals(DEFAULT_LOCAL_USER)) == []
    # A reload shows what the live page did (the children's messages come from their runs).
    ui.page.reload()
    assert_settled(ui)
    open_trace(ui)
    assert view(ui, 2) == live
    assert FINDINGS not in answer_text(ui)  # the children's text stays inside their blocks
    assert_clean_console(ui)


def test_three_levels_nest_chief_manager_researcher(deep_ui: Ui) -> None:
    ui = deep_ui
    ui.open()
    ui.page.get_by_test_id("agent-picker").select_option("chief")
    ui.send("go deep on otters")
    assert_settled(ui)
    assert answer_text(ui) == "The chief's answer."
    open_trace(ui)
    message = last_assistant(ui)
    manager = block(message, "manager")
    expect(manager).to_have_count(1)
    expand(manager)
    researcher = block(manager, "researcher", depth=1)
    expect(researcher).to_have_count(1)
    expand(researcher)
    expect(researcher.get_by_test_id("sub-agent-body")).to_contain_text("Otters use rocks as tools.")
    expect(manager.get_by_test_id("sub-agent-body").first).to_contain_text("Managed: otters.")
    live = view(ui, 2)
    assert [(v["agent"], v["depth"], v["state"]) for v in live] == [
        ("manager", "0", "done"),
        ("researcher", "1", "done"),
    ]
    ui.page.reload()
    assert_settled(ui)
    open_trace(ui)
    assert view(ui, 2) == live
    assert_clean_console(ui)

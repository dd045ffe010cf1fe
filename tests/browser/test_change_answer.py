"""The web UI's "Change my answer": on an ended run's decided approval, the other decision forks the
run there; the new branch runs the approved tool once and answers, and the old branch stays
reachable with ‹ ›. The agent is `tests.support.fork_agents` (a scripted model: gather, ask to send
the report, then "Not sent." after a denial or "Sent." after the tool ran; its tools count their runs)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import Stack, Ui, make_stack, make_ui
from tests.support import fork_agents as agents


@pytest.fixture(scope="module")
def fork_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from make_stack(tmp_path_factory.mktemp("change-answer"), STEPLINE_AGENT="tests.support.fork_agents:AGENT")


@pytest.fixture
def fork_ui(browser: Browser, fork_stack: Stack) -> Iterator[Ui]:
    yield from make_ui(browser, fork_stack)


def test_change_my_answer_turns_a_denial_into_an_approval_on_a_new_branch(fork_ui: Ui) -> None:
    ui, page = fork_ui, fork_ui.page
    ui.open()
    ui.send("send the report")
    card = page.get_by_test_id("approval-card")
    card.get_by_role("button", name="Deny").click()
    answer = page.get_by_test_id("final-answer").last
    expect(answer).to_have_text("Not sent.", timeout=30_000)
    trace = page.get_by_test_id("execution-trace").last
    expect(trace).to_have_attribute("data-trace-state", "complete")
    sent, gathered = agents.RUNS["send_report"], agents.RUNS["gather"]
    expect(page.get_by_test_id("change-answer")).to_have_count(0)  # the trace is collapsed: no card
    trace.locator(".trace-head").click()
    expect(card).to_have_attribute("data-approval-state", "denied")
    card.get_by_test_id("change-answer").click()
    change = card.get_by_test_id("change-answer-send")
    expect(change).to_have_text("Approve instead")
    ui.screenshot("change-answer")
    change.click()
    expect(page.get_by_test_id("final-answer").last).to_have_text("Sent.", timeout=30_000)
    nav = page.get_by_test_id("branch-nav")
    expect(nav.get_by_test_id("branch-position")).to_have_text("2/2")
    expect(page.get_by_test_id("execution-trace").last).to_have_attribute("data-trace-state", "complete")
    assert agents.RUNS["send_report"] == sent + 1, "the approved tool ran once, on the new branch"
    assert agents.RUNS["gather"] == gathered, "the step before the decision was not run again"
    stored = ui.stored()
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant"]
    tool = next(p for p in stored["messages"][1]["parts"] if p["type"] == "tool-send_report")
    assert tool["state"] == "output-available" and tool["approval"]["approved"] is True
    nav.get_by_test_id("branch-prev").click()
    expect(nav.get_by_test_id("branch-position")).to_have_text("1/2")
    expect(page.get_by_test_id("final-answer").last).to_have_text("Not sent.")
    nav.get_by_test_id("branch-next").click()
    expect(page.get_by_test_id("final-answer").last).to_have_text("Sent.")
    assert agents.RUNS["send_report"] == sent + 1, "switching branches runs nothing"
    assert ui.console.unexpected() == []

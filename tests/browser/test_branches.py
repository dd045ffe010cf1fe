"""The web UI's edit and branch: the Edit button on a user message and Regenerate on any answer start
a branch, ‹ n/m › switches between the versions, and the chat shows the branch the server keeps as
active (also after a reload). The agent is `tests.support.control_agents` (a scripted model that echoes the message)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import Stack, Ui, make_stack, make_ui
from tests.control.test_new_message import until
from tests.support import control_agents as agents


@pytest.fixture(scope="module")
def branch_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from make_stack(tmp_path_factory.mktemp("branches"), STEPLINE_AGENT="tests.support.control_agents:AGENT")


@pytest.fixture
def branch_ui(browser: Browser, branch_stack: Stack) -> Iterator[Ui]:
    yield from make_ui(browser, branch_stack)


def test_edit_a_message_then_switch_between_its_versions(branch_ui: Ui) -> None:
    ui, page = branch_ui, branch_ui.page
    ui.open()
    ui.send("first words")
    expect(page.get_by_test_id("final-answer").last).to_contain_text("You said: first words", timeout=30_000)
    ui.send("second words")
    expect(page.get_by_test_id("final-answer").last).to_contain_text("You said: second words", timeout=30_000)
    second = page.get_by_test_id("user-message").nth(1)
    second.get_by_test_id("edit-message").click()
    expect(second).to_contain_text("not undone")
    second.get_by_test_id("edit-text").fill("second words, edited")
    second.get_by_test_id("edit-send").click()
    expect(page.get_by_test_id("final-answer").last).to_contain_text("You said: second words, edited", timeout=30_000)
    nav = page.get_by_test_id("branch-nav")
    expect(nav).to_have_count(1)
    expect(nav.get_by_test_id("branch-position")).to_have_text("2/2")
    expect(page.get_by_test_id("user-message")).to_have_count(2)
    nav.get_by_test_id("branch-prev").click()
    expect(nav.get_by_test_id("branch-position")).to_have_text("1/2")
    expect(page.get_by_test_id("user-message").nth(1)).to_contain_text("second words")
    expect(page.get_by_test_id("final-answer").last).to_have_text("You said: second words")
    stored = ui.stored()
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant"] * 2
    assert stored["branches"][0]["activeId"] == stored["messages"][2]["id"]
    page.reload()
    expect(page.get_by_test_id("branch-position")).to_have_text("1/2", timeout=15_000)
    page.get_by_test_id("branch-next").click()
    expect(page.get_by_test_id("final-answer").last).to_have_text("You said: second words, edited")
    assert ui.stored()["messages"][2]["parts"][0]["text"] == "second words, edited"


def test_regenerate_an_earlier_answer_starts_a_branch_and_is_not_offered_while_a_run_works(branch_ui: Ui) -> None:
    """Every answer has Regenerate (the AI SDK's `regenerate({ messageId })`): regenerating the first
    of three answers makes a branch at it; the later turns stay, one ‹ › away. While a run works no
    answer offers it (the server would refuse it with a 409 naming the run)."""
    ui, page = branch_ui, branch_ui.page
    ui.open()
    ui.send("first words")
    expect(page.get_by_test_id("final-answer").last).to_contain_text("You said: first words", timeout=30_000)
    ui.send("second words")
    expect(page.get_by_test_id("final-answer").last).to_contain_text("You said: second words", timeout=30_000)
    expect(page.get_by_test_id("regenerate")).to_have_count(2)
    with agents.tool_held() as release:
        ui.send("use the held tool")
        expect(page.get_by_test_id("user-message")).to_have_count(3)
        until(lambda: agents.STARTED["held_step"] > agents.RETURNED["held_step"], "the held tool works")
        expect(page.get_by_test_id("regenerate")).to_have_count(0)  # the run works: none of them
        release.set()
        expect(page.get_by_test_id("final-answer").last).to_contain_text("The held tool is done.", timeout=30_000)
    regenerates = page.get_by_test_id("assistant-message").get_by_test_id("regenerate")
    expect(regenerates).to_have_count(3)
    before = ui.stored()
    first_answer = before["messages"][1]["id"]
    regenerates.first.click()
    nav = page.get_by_test_id("branch-nav")
    expect(nav.get_by_test_id("branch-position")).to_have_text("2/2", timeout=30_000)
    expect(page.get_by_test_id("user-message")).to_have_count(1)
    expect(page.get_by_test_id("final-answer").last).to_have_text("You said: first words")
    ui.screenshot("regenerate-branch")
    stored = ui.stored()
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant"], "the later turns left the history"
    (point,) = stored["branches"]
    assert point["siblingIds"] == [first_answer, stored["messages"][1]["id"]] and point["activeId"] != first_answer
    nav.get_by_test_id("branch-prev").click()
    expect(nav.get_by_test_id("branch-position")).to_have_text("1/2")
    expect(page.get_by_test_id("user-message")).to_have_count(3)
    expect(page.get_by_test_id("final-answer").last).to_have_text("The held tool is done.")
    assert [m["id"] for m in ui.stored()["messages"]] == [m["id"] for m in before["messages"]], "kept, not deleted"

"""The web UI's "Change my answer" on an ended run's answered question: another option forks the run
there and the new branch answers again; the old answer stays reachable with ‹ ›. The model is the
browser book (`tests.browser.book`): its "ask" script asks ask_user_question (Red or Blue), then
answers "Thanks for answering."."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.conftest import Ui
from tests.browser.test_chat_ui import answer_text, assert_settled, last_assistant, open_trace


def test_change_my_answer_to_a_question_answers_it_again_on_a_new_branch(ui: Ui) -> None:
    page = ui.page
    ui.open()
    ui.send("ask me something")
    page.get_by_test_id("live-question").get_by_role("button", name="Blue").click()
    assert_settled(ui)
    open_trace(ui)
    question = last_assistant(ui).get_by_test_id("question-card")
    expect(question).to_have_attribute("data-question-state", "answered")
    expect(question).to_contain_text("Blue")
    question.get_by_test_id("change-answer").click()
    question.get_by_test_id("change-answer-option").filter(has_text="Red").click()
    expect(page.get_by_test_id("branch-nav").get_by_test_id("branch-position")).to_have_text("2/2", timeout=30_000)
    assert_settled(ui)
    open_trace(ui)
    expect(last_assistant(ui).get_by_test_id("question-card")).to_contain_text("Answer: Red")
    assert "Thanks for answering." in answer_text(ui)
    stored = ui.stored()
    (tool,) = [p for p in stored["messages"][1]["parts"] if p["type"] == "tool-ask_user_question"]
    assert tool["state"] == "output-available" and tool["output"] == {"answer": "Red"}
    page.get_by_test_id("branch-prev").click()
    expect(page.get_by_test_id("branch-position")).to_have_text("1/2")
    open_trace(ui)
    expect(last_assistant(ui).get_by_test_id("question-card")).to_contain_text("Answer: Blue")
    assert ui.console.unexpected() == []

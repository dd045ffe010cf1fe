"""Stop while the page follows a waiting run on a resume stream: the stream ends with the run, and
the page sends nothing after it.

The resume stream follows the run through its wait (after a reload), so it carries the run's end:
the question the end closed, then the abort. That stream ends normally, and the parts the end closed
look answered to the SDK's `lastAssistantMessageIsComplete…` checks; a page that let
`sendAutomaticallyWhen` fire there sent a continuation of a run that had ended (a 409 in the
console). The page never continues a run whose message carries its end (`completedAt`).
"""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.conftest import Ui
from tests.browser.test_chat_ui import assert_clean_console, assert_settled, last_assistant, open_trace, trace


def test_stop_while_following_a_waiting_question_after_a_reload_sends_no_continuation(ui: Ui) -> None:
    ui.open()
    ui.send("ask me something")
    expect(ui.page.get_by_test_id("live-question")).to_contain_text("Which colour?")
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "ready")
    ui.page.reload()
    # The resume stream follows the run through its wait: the run's end comes on it.
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "streaming")
    expect(trace(ui)).to_have_attribute("data-trace-state", "waiting")
    ui.page.get_by_test_id("stop").click()
    assert_settled(ui, "incomplete")
    open_trace(ui)
    question = last_assistant(ui).get_by_test_id("question-card")
    expect(question).to_have_attribute("data-question-state", "aborted")
    stored = ui.stored()
    assert stored["messages"][-1]["metadata"]["abort"]["reason"] == "user_cancelled"
    posts = [(r[1].split("/")[2], r[2]) for r in ui.stack.proxy.requests if r[0] == "POST"]
    assert posts == [("chat", 200), ("runs", 200)], "the send and the stop, no continuation after the end"
    assert_clean_console(ui)

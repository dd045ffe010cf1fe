"""The web UI while a run works: a queued message is listed and cancellable until its run starts, a
steering message shows inline where the model read it, and a message that would cancel a pending
approval asks first. The agent is `tests.support.control_agents` (a scripted model)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from tests.browser.conftest import Stack, Ui, make_stack, make_ui
from tests.support import control_agents as agents


@pytest.fixture(scope="module")
def control_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from make_stack(tmp_path_factory.mktemp("control"), STEPLINE_AGENT="tests.support.control_agents:AGENT")


@pytest.fixture
def control_ui(browser: Browser, control_stack: Stack) -> Iterator[Ui]:
    yield from make_ui(browser, control_stack)


def test_queued_messages_are_listed_cancellable_and_answered_in_turn(control_ui: Ui) -> None:
    ui, page = control_ui, control_ui.page
    ui.open()
    ui.send("answer slowly")
    expect(page.get_by_test_id("new-message-policy")).to_be_visible()
    ui.send("first follow-up")
    expect(page.get_by_test_id("waiting-message")).to_have_count(1)
    ui.send("second follow-up")
    queued = page.get_by_test_id("waiting-message")
    expect(queued).to_have_count(2)
    expect(queued.nth(0)).to_contain_text("first follow-up")
    expect(queued.nth(1)).to_have_attribute("data-mode", "queue")
    queued.nth(1).get_by_test_id("cancel-queued").click()
    expect(queued).to_have_count(1)
    expect(page.get_by_test_id("user-message").filter(has_text="first follow-up")).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("final-answer").last).to_contain_text("You said: first follow-up", timeout=30_000)
    expect(page.get_by_test_id("waiting-message")).to_have_count(0)
    expect(page.get_by_test_id("user-message").filter(has_text="second follow-up")).to_have_count(0)
    stored = ui.stored()
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant"] * 2 and stored["waiting"] == []


def test_a_steering_message_shows_inline_in_the_answer(control_ui: Ui) -> None:
    ui, page = control_ui, control_ui.page
    ui.open()
    box, send = page.get_by_test_id("composer-input"), page.get_by_test_id("send")
    chat: list[str] = []  # the steer must be waiting before the task's step ends, however busy the machine
    with agents.task_held_until(lambda: bool(chat) and agents.steer_waiting(ui.stack.server, chat[0])):
        with first_chat_request_held(page) as release:
            ui.send("do a long task")
            ui.send("please answer in capitals")  # before the server has the run: a steer would overtake it
            expect(send).to_be_disabled()
            expect(page.get_by_test_id("new-message-policy")).to_have_count(0)
            expect(box).to_have_value("please answer in capitals")  # kept, not sent
            release()
        page.get_by_test_id("new-message-policy").select_option("steer")
        chat.append(ui.chat_id)
        box.press("Enter")
        expect(box).to_have_value("")
        answer = page.get_by_test_id("assistant-message").last
        expect(answer.get_by_test_id("final-answer")).to_contain_text("OK, STEERED INTO CAPITALS.", timeout=30_000)
    expect(page.get_by_test_id("assistant-message")).to_have_count(1)
    expect(page.get_by_test_id("user-message")).to_have_count(1)
    for _ in range(2):  # live, then from the stored message after a reload
        trace = page.get_by_test_id("assistant-message").last.get_by_test_id("execution-trace")
        expect(trace).to_have_attribute("data-open", "false")  # a finished run's trace collapses
        trace.get_by_role("button").first.click()
        expect(trace.get_by_test_id("steer-message")).to_contain_text("please answer in capitals")
        ui.page.reload()


def test_a_message_that_would_cancel_a_pending_approval_asks_first(control_ui: Ui) -> None:
    ui, page = control_ui, control_ui.page
    ui.open()
    ui.send("remember milk")
    expect(page.get_by_test_id("approval-card")).to_be_visible(timeout=20_000)
    ui.send("forget it")
    warning = page.get_by_test_id("approval-warning")
    expect(warning).to_contain_text("cancel the pending approval of remember")
    page.get_by_test_id("keep-approval").click()
    expect(warning).to_have_count(0)
    assert [m["role"] for m in ui.stored()["messages"]] == ["user", "assistant"], "nothing was sent"
    ui.send("forget it")
    page.get_by_test_id("send-anyway").click()
    expect(page.get_by_test_id("final-answer").last).to_contain_text("You said: forget it", timeout=20_000)
    assert [m["role"] for m in ui.stored()["messages"]] == ["user", "assistant"] * 2


@contextmanager
def first_chat_request_held(page: Page) -> Generator[Callable[[], None]]:
    """Inside: the page's first `POST /api/chat` waits (the server has not seen it) until the callable
    yielded lets it go; later ones pass. On leaving, it goes in any case."""
    held: list[Route] = []
    page.route("**/api/chat", lambda route: held.append(route) if not held else route.continue_())

    def release() -> None:
        for _ in range(500):  # the page issues the request soon after the click; at most 10 s
            if held:
                break
            page.wait_for_timeout(20)
        if held:
            held.pop().continue_()
        page.unroute("**/api/chat")

    try:
        yield release
    finally:
        if held:
            release()

"""What a person reads without opening everything: a failed or interrupted tool marked in the
collapsed trace, an approval card with the tool's whole arguments, and an artifact's "step" link
that opens the step even when the trace is collapsed."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from stepline.api.identity import DEFAULT_LOCAL_USER
from stepline.store.results import ClaimResult
from tests.browser.book import LONG_ARGUMENTS, LONG_WORD
from tests.browser.conftest import Ui
from tests.browser.test_chat_ui import (
    answer_text,
    assert_clean_console,
    assert_settled,
    last_assistant,
    open_trace,
    trace,
)

INTERRUPTED_CALL = "call-interrupted"


@pytest.fixture
def crashed_attempt(ui: Ui) -> Iterator[None]:
    """Make the `call-interrupted` tool call look started by an earlier attempt of its step that died
    (what a crashed Lambda leaves): before the worker's claim, a claim and a start with another token,
    through the real store. The worker's guard then finds it started and does not run it again."""
    store: Any = ui.stack.server.server.backend.services.store
    claim: Callable[..., ClaimResult] = store.claim_tool_call

    def after_a_crash(user_id: str, run_id: str, tool_call_id: str, **kwargs: Any) -> ClaimResult:
        if tool_call_id == INTERRUPTED_CALL:
            crashed = claim(user_id, run_id, tool_call_id, **{**kwargs, "claim_token": "the-attempt-that-died"})
            if crashed.kind == "claimed":
                now = int(time.time() * 1000)
                store.start_tool_call(user_id, run_id, tool_call_id, claim_token="the-attempt-that-died", now=now)
        return claim(user_id, run_id, tool_call_id, **kwargs)

    store.claim_tool_call = after_a_crash
    try:
        yield
    finally:
        del store.claim_tool_call  # the instance attribute goes; the store's own method is back


def test_a_run_without_a_failure_has_the_plain_mark(ui: Ui) -> None:
    ui.open()
    ui.send("list files slowly")
    assert_settled(ui)
    expect(trace(ui)).to_have_attribute("data-trace-mark", "complete")
    expect(trace(ui).get_by_test_id("trace-failed")).to_have_count(0)
    assert_clean_console(ui)


def test_a_failed_tool_is_marked_in_the_collapsed_trace(ui: Ui) -> None:
    ui.open()
    ui.send("read a missing file")
    assert_settled(ui)
    assert "There is no such file." in answer_text(ui)
    # Collapsed: the failure shows without opening the trace, not a clean success's green check.
    expect(trace(ui)).to_have_attribute("data-open", "false")
    expect(trace(ui)).to_have_attribute("data-trace-mark", "failed")
    expect(trace(ui).get_by_test_id("trace-failed")).to_have_text("1 failed")
    open_trace(ui)
    tool = last_assistant(ui).get_by_test_id("tool-block")
    expect(tool).to_have_attribute("data-tool-state", "output-error")
    expect(tool.get_by_test_id("tool-status")).to_have_text("failed")
    expect(tool.get_by_test_id("tool-error")).to_contain_text("no file nothing/here.md")
    assert_clean_console(ui)


@pytest.mark.usefixtures("crashed_attempt")
def test_an_interrupted_tool_is_marked_failed_not_done(ui: Ui) -> None:
    ui.open()
    ui.send("an interrupted listing please")
    assert_settled(ui)
    expect(trace(ui)).to_have_attribute("data-trace-mark", "failed")
    expect(trace(ui).get_by_test_id("trace-failed")).to_have_text("1 failed")
    open_trace(ui)
    tool = last_assistant(ui).get_by_test_id("tool-block")
    expect(tool).to_have_attribute("data-tool-state", "output-error")
    expect(tool.get_by_test_id("tool-status")).to_have_text("failed")
    expect(tool.get_by_test_id("tool-error")).to_contain_text("ToolInterruptedError")
    expect(tool.get_by_test_id("tool-error")).to_contain_text("it is not run again")
    # The server's records agree: the tool did not run again, it ended in the interruption.
    stored = ui.stored()["messages"][-1]
    part = next(p for p in stored["parts"] if p.get("toolCallId") == INTERRUPTED_CALL)
    assert part["state"] == "output-error" and "ToolInterruptedError" in part["errorText"]
    store: Any = ui.stack.server.server.backend.services.store
    calls = store.list_tool_calls(DEFAULT_LOCAL_USER, stored["runId"])
    [call] = [c for c in calls if c.tool_call_id == INTERRUPTED_CALL]
    assert call.status == "error" and call.output is None
    assert "ToolInterruptedError" in str(call.error)
    assert_clean_console(ui)


def test_the_approval_card_shows_every_argument_in_full(ui: Ui) -> None:
    ui.open()
    ui.send("long arguments please")
    card = last_assistant(ui).get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-approval-state", "requested")
    args = card.get_by_test_id("approval-args")
    top = args.locator(":scope > dl > [data-testid=approval-arg]")
    expect(top).to_have_count(len(LONG_ARGUMENTS))
    assert [top.nth(i).get_attribute("data-arg-key") for i in range(top.count())] == list(LONG_ARGUMENTS)
    # Whole values, nothing cut: the long text to its last line, with its line breaks.
    content = args.locator("[data-arg-key=content] > dd")
    assert content.inner_text() == LONG_ARGUMENTS["content"]
    assert args.locator("[data-arg-key=word] > dd").inner_text() == LONG_WORD
    assert "…" not in args.inner_text()
    # Nested values read as key/value pairs and lists, not as a JSON string.
    options = args.locator("[data-arg-key=options] > dd")
    expect(options.locator("[data-arg-key=mode] > dd")).to_have_text("create")
    expect(options.locator("[data-arg-key=tags] li")).to_have_text(["draft", "review"])
    expect(options.locator("[data-arg-key=owner] [data-arg-key=name] > dd")).to_have_text("Ada")
    expect(args.locator("[data-arg-key=overwrite] > dd")).to_have_text("false")
    expect(args.locator("[data-arg-key=count] > dd")).to_have_text("3")
    # Readable: every value wraps inside the card; nothing runs off to the side.
    card_width = card.evaluate("e => e.getBoundingClientRect().width")
    widest = args.evaluate("e => Math.max(...[...e.querySelectorAll('dd')].map(d => d.scrollWidth))")
    assert widest <= card_width, (widest, card_width)
    assert args.evaluate("e => e.scrollWidth <= e.clientWidth")
    args.locator("[data-arg-key=count]").scroll_into_view_if_needed()  # the picture: the nested values
    ui.screenshot("approval-arguments")
    card.get_by_role("button", name="Approve").click()
    assert_settled(ui)
    assert_clean_console(ui)


def test_the_artifact_step_link_opens_the_step_in_a_collapsed_trace(ui: Ui) -> None:
    ui.open()
    ui.send("save an artifact")
    last_assistant(ui).get_by_test_id("approval-card").get_by_role("button", name="Approve").click()
    assert_settled(ui)
    expect(trace(ui)).to_have_attribute("data-open", "false")
    expect(last_assistant(ui).get_by_test_id("tool-block")).to_have_count(0)  # collapsed: no blocks in the page
    step = last_assistant(ui).get_by_test_id("artifact-step")
    step.click()
    expect(trace(ui)).to_have_attribute("data-open", "true")
    saved = last_assistant(ui).locator("#tool-call-save")
    expect(saved).to_be_in_viewport()
    expect(saved.locator("details")).to_have_attribute("open", "")
    expect(step).to_have_attribute("data-shown", "true")
    # The person can close it again, and the link opens it again.
    trace(ui).get_by_role("button").first.click()
    expect(trace(ui)).to_have_attribute("data-open", "false")
    step.click()
    expect(trace(ui)).to_have_attribute("data-open", "true")
    expect(last_assistant(ui).locator("#tool-call-save")).to_be_in_viewport()
    assert_clean_console(ui)

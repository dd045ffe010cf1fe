"""The run inspector in the browser: an assistant message's "Inspect" opens its run step by step.

The request as sent (the user's text among the messages, the tool's input schema), the answer,
tokens, timings, and the tool with who approved it — read from the server's records, so it is the
same after a reload.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.conftest import Ui
from tests.browser.test_chat_ui import assert_clean_console, assert_settled, last_assistant

DURATION = r"(\d+ ms|\d+s|\d+m \d\ds)"
"""A duration as the inspector writes it: milliseconds below a second, then `formatDuration`'s
seconds and minutes (a loaded machine queues a step for a second or more)."""


def test_inspect_shows_each_step_as_sent_with_the_tool_schema_tokens_and_timings(ui: Ui) -> None:
    ui.open()
    ui.send("write a note for the inspector")
    card = last_assistant(ui).get_by_test_id("approval-card")
    card.get_by_role("button", name="Approve").click()
    assert_settled(ui)
    ui.page.reload()  # what the inspector shows comes from the server's records
    last_assistant(ui).get_by_test_id("inspect").click()
    inspector = ui.page.get_by_test_id("run-inspector")
    expect(inspector).to_be_visible()
    steps = inspector.get_by_test_id("inspect-step")
    expect(steps).to_have_count(2)
    first = steps.nth(0)
    # The request as sent: the user's message, the tool with its JSON Schema.
    expect(first.get_by_test_id("inspect-message").first).to_contain_text("write a note for the inspector")
    schema = first.get_by_test_id("tool-schema-write_file")
    expect(schema).to_be_hidden()  # each tool's schema opens on a click
    first.get_by_test_id("inspect-tool-def").filter(has_text="write_file").locator("summary").click()
    expect(schema).to_be_visible()
    expect(schema).to_contain_text('"type": "object"')
    expect(schema).to_contain_text('"path"')
    # Tokens (the book's usage: 100 in, 20 out) and timings of each step.
    expect(first.get_by_test_id("inspect-tokens")).to_contain_text("100 in · 20 out tokens")
    expect(first.get_by_test_id("inspect-timings")).to_have_text(
        re.compile(rf"queued {DURATION} · first token {DURATION} · took {DURATION}")
    )
    # The tool ran once, approved by the local user; the second step's answer.
    expect(first.get_by_test_id("inspect-tool-run")).to_contain_text("write_file")
    expect(first.get_by_test_id("inspect-approval")).to_contain_text("approved by")
    second = steps.nth(1)
    expect(second.get_by_test_id("inspect-answer")).to_contain_text("The note is handled.")
    # The second request carries the first answer and the tool's result.
    expect(second.get_by_test_id("inspect-message")).to_have_count(3)
    ui.screenshot("run-inspector")
    inspector.get_by_role("button", name="Close").click()
    expect(inspector).to_have_count(0)
    assert_clean_console(ui)


def test_a_failed_run_can_be_inspected_too(ui: Ui) -> None:
    ui.open()
    ui.send("fail please")
    assert_settled(ui, "error")
    last_assistant(ui).get_by_test_id("inspect").click()
    summary = ui.page.get_by_test_id("inspect-summary")
    expect(summary).to_contain_text("failed")
    expect(summary).to_contain_text("0 steps")  # the step failed for good: the run's error says why
    assert_clean_console(ui)

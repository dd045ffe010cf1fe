"""The budget card: a run a limit paused shows what it needs, and the person raises the limit or ends it.

A server whose runs may spend 10 tokens (below any call's worst case, so every answer pauses
before its first call). The daily budget's card: test_budget_card_admin.py. A run stopped while its
card waits closes the card ("Not decided"), also after a reload.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, expect

from tests.browser.conftest import Stack, Ui, make_stack, make_ui
from tests.browser.test_chat_ui import assert_settled, open_trace


@pytest.fixture(scope="module")
def run_limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from make_stack(Path(tmp_path_factory.mktemp("run-budget")), STEPLINE_LIMITS=json.dumps({"run_tokens": 10}))


def paused_card(ui: Ui) -> Locator:
    ui.open()
    ui.send("hello")
    card = ui.page.get_by_test_id("budget-card")
    expect(card).to_have_attribute("data-state", "requested", timeout=20_000)
    expect(card).to_contain_text("Budget reached")
    return card


def test_raising_the_runs_limit_lets_the_answer_finish(browser: Browser, run_limited: Stack) -> None:
    for ui in make_ui(browser, run_limited):
        card = paused_card(ui)
        expect(card).to_contain_text("more than this run's limit")
        ui.page.get_by_test_id("budget-approve").click()
        assert_settled(ui)
        parts = ui.stored()["messages"][-1]["parts"]
        assert "".join(p["text"] for p in parts if p.get("type") == "text") == "Hello from the **script**."
        [budget] = [p for p in parts if p.get("type") == "data-budget"]
        assert budget["data"]["state"] == "approved"


def test_ending_at_the_limit_keeps_the_card_with_its_decision(browser: Browser, run_limited: Stack) -> None:
    for ui in make_ui(browser, run_limited):
        paused_card(ui)
        ui.page.get_by_test_id("budget-deny").click()
        expect(ui.page.get_by_test_id("budget-card")).to_have_attribute("data-state", "denied", timeout=20_000)
        expect(ui.page.get_by_test_id("budget-card")).to_contain_text("Ended at the limit")
        deadline = time.monotonic() + 20  # the card shows the decision; the run's end is written next
        while (status := ui.stored()["status"]) != "failed":
            assert time.monotonic() < deadline, f"the conversation stayed {status}"
            time.sleep(0.05)


def test_stopping_while_the_card_waits_closes_it_as_not_decided(browser: Browser, run_limited: Stack) -> None:
    for ui in make_ui(browser, run_limited):
        paused_card(ui)
        ui.page.get_by_test_id("stop").click()
        assert_settled(ui, "incomplete")
        open_trace(ui)
        card = ui.page.get_by_test_id("budget-card")
        expect(card).to_have_attribute("data-state", "closed")
        expect(card).to_contain_text("Not decided")
        closed = card.get_by_test_id("budget-closed")
        expect(closed).to_have_text("Stopped before a decision: the limit was not raised.")
        expect(card.get_by_test_id("budget-approve")).to_have_count(0)
        message = ui.stored()["messages"][-1]
        assert message["metadata"]["closedByEnd"]["dataPartIds"] == [card.get_attribute("data-approval-id")]
        ui.page.reload()  # the stored message says the same
        open_trace(ui)
        expect(ui.page.get_by_test_id("budget-card")).to_have_attribute("data-state", "closed")

"""A sub-agent's budget card: the researcher's request, raised into the conversation's message, decided there.

A lead whose researcher would spend past the lead's run limit (`tests.support.tree_agents`): the
researcher pauses, the conversation shows the budget card naming it, and raising the limit there
lets the researcher and the lead go on to the lead's answer with one decision.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import Stack, make_stack, make_ui
from tests.browser.test_chat_ui import assert_settled, open_trace


@pytest.fixture(scope="module")
def tree_limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A lead whose researcher would spend past the lead's run limit (`tests.support.tree_agents`)."""
    yield from make_stack(
        Path(tmp_path_factory.mktemp("tree-budget")), STEPLINE_AGENT="tests.support.tree_agents:AGENTS"
    )


def test_a_sub_agents_budget_request_is_the_conversations_card(browser: Browser, tree_limited: Stack) -> None:
    for ui in make_ui(browser, tree_limited):
        ui.open()
        ui.send("research beavers for me")
        # The conversation's card (the one naming who asks); the child's own shows inside its block.
        card = ui.page.get_by_test_id("budget-card").filter(has=ui.page.get_by_test_id("budget-origin"))
        expect(card).to_have_attribute("data-state", "requested", timeout=20_000)
        expect(card.get_by_test_id("budget-origin")).to_have_text("Asked by the researcher sub-agent")
        expect(card).to_contain_text("which its sub-agents share")
        card.get_by_test_id("budget-approve").click()
        assert_settled(ui)
        open_trace(ui)  # a settled answer folds its blocks into its trace
        expect(card).to_have_attribute("data-state", "approved")
        nested = ui.page.get_by_test_id("sub-agent-body").get_by_test_id("budget-card")
        expect(nested.get_by_test_id("budget-approve")).to_have_count(0)  # decided in one place only
        parts = ui.stored()["messages"][-1]["parts"]
        assert [p["text"] for p in parts if p.get("type") == "text"] == ["Here is what I found."]
        [budget] = [p for p in parts if p.get("type") == "data-budget"]
        assert budget["data"]["state"] == "approved" and budget["data"]["subAgent"]["agent"] == "researcher"

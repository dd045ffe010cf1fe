"""The budget card of a daily budget: only an admin may raise it, and this page's user is none.

A server whose users have a 10-token daily budget (below any call's worst case): the card's
Raise is refused by the server (403), the card says so, and the run still waits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import Stack, make_stack, make_ui
from tests.browser.test_budget_card import paused_card


@pytest.fixture(scope="module")
def user_limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    limits = json.dumps({"user_day_tokens": 10})
    yield from make_stack(Path(tmp_path_factory.mktemp("user-budget")), STEPLINE_LIMITS=limits)


def test_a_daily_budget_needs_an_admin_and_the_card_says_so(browser: Browser, user_limited: Stack) -> None:
    for ui in make_ui(browser, user_limited):
        card = paused_card(ui)
        expect(card).to_contain_text("more than your daily budget")
        ui.page.get_by_test_id("budget-approve").click()
        expect(ui.page.get_by_test_id("budget-refused")).to_contain_text("needs an admin")
        expect(card).to_have_attribute("data-state", "requested")  # nothing was decided
        assert ui.stored()["status"] == "waiting_approval"

"""The usage view at the foot of the sidebar: today's and this month's spending, per agent, against the limit.

Its own server (a price file pricing the scripted book at $100 per million input tokens and $1,000
per million output tokens, and a daily user budget of $5): one answer of the book's fallback
(100 input, 20 output tokens) costs $0.03.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import Stack, Ui, make_stack, make_ui
from tests.browser.test_chat_ui import assert_clean_console, assert_settled


@pytest.fixture(scope="module")
def priced_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = Path(tmp_path_factory.mktemp("usage"))
    prices = tmp / "prices.json"
    prices.write_text(json.dumps({"scripted:book": {"input": 100, "output": 1000}}), encoding="utf-8")
    yield from make_stack(tmp, STEPLINE_PRICES=str(prices), STEPLINE_LIMITS='{"user_day_usd": 5}')


@pytest.fixture
def priced_ui(browser: Browser, priced_stack: Stack) -> Iterator[Ui]:
    yield from make_ui(browser, priced_stack)


def test_the_usage_view_shows_what_an_answer_cost(priced_ui: Ui) -> None:
    ui = priced_ui
    ui.open()
    today = ui.page.get_by_test_id("usage-today")
    expect(today).to_contain_text("0 tokens")
    ui.send("hello")
    assert_settled(ui)
    expect(today).to_contain_text("$0.03 · 120 tokens")  # re-read once the run ended
    expect(today).to_contain_text("of $5.00")
    expect(today.get_by_test_id("usage-agent")).to_contain_text("$0.03 · 120 tokens")
    expect(ui.page.get_by_test_id("usage-this-month")).to_contain_text("$0.03 · 120 tokens")
    assert_clean_console(ui)


def test_a_server_out_of_reach_is_logged_as_a_network_error_by_every_view(priced_ui: Ui) -> None:
    """Each background read (the sidebar's list, the usage view, the agents) logs an unreachable server
    the same way, so a restart reads as one kind of error: `network`, with the view in `during`."""
    ui = priced_ui
    ui.open()
    expect(ui.page.get_by_test_id("usage-today")).to_contain_text("0 tokens")
    ui.page.route("**/api/**", lambda route: route.abort("connectionrefused"))
    # the usage view's failed read, whichever kind it is logged as
    with ui.page.expect_console_message(lambda m: "usage" in m.text and "[stepline-ui]" in m.text):
        ui.page.reload()  # every view reads again, each request refused before it reaches the server
    expect(ui.page.get_by_text("the server cannot be reached")).to_be_visible()
    logged = ui.console.matching(r"\[stepline-ui\]")
    assert any('"during":"usage"' in line for line in logged), logged
    assert all("[stepline-ui] network error" in line for line in logged), logged

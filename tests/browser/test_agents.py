"""Several agents behind one deployment: the picker of a new chat, and the agent a chat keeps.

Its own server (the deployment serves `tests.support.team_agents:AGENTS`; one dev server at a time
per process: moto's state is global).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import Stack, Ui, make_stack, make_ui
from tests.browser.test_chat_ui import answer_text, assert_clean_console, assert_settled


@pytest.fixture(scope="module")
def team_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from make_stack(Path(tmp_path_factory.mktemp("agents")), STEPLINE_AGENT="tests.support.team_agents:AGENTS")


@pytest.fixture
def team_ui(browser: Browser, team_stack: Stack) -> Iterator[Ui]:
    yield from make_ui(browser, team_stack)


def test_a_new_chat_picks_its_agent_and_keeps_it(team_ui: Ui) -> None:
    ui = team_ui
    ui.open()
    picker = ui.page.get_by_test_id("agent-picker")
    expect(picker).to_have_value("sales")  # the deployment's default
    picker.select_option("billing")
    expect(ui.page.get_by_text("Refunds and invoices")).to_be_visible()
    ui.send("hello")
    assert_settled(ui)
    assert answer_text(ui) == "billing here."
    expect(picker).to_have_count(0)  # a chat's agent is fixed by its first message
    assert ui.stored()["agent"] == "billing"
    ui.send("and again")
    expect(ui.page.get_by_test_id("assistant-message")).to_have_count(2)
    assert_settled(ui)
    assert answer_text(ui) == "billing here."
    ui.page.get_by_test_id("new-chat").click()
    expect(ui.page.get_by_test_id("agent-picker")).to_have_value("sales")
    assert_clean_console(ui)

"""The run inspector's sub-agent tree in the browser: a lead that asked its researcher, each run openable.

Its own server (the deployment serves `tests.support.desk_agents:AGENTS`; one dev server at a time
per process: moto's state is global).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import Stack, Ui, make_stack, make_ui
from tests.browser.test_chat_ui import assert_clean_console, assert_settled, last_assistant


@pytest.fixture(scope="module")
def desk_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from make_stack(Path(tmp_path_factory.mktemp("desk")), STEPLINE_AGENT="tests.support.desk_agents:AGENTS")


@pytest.fixture
def desk_ui(browser: Browser, desk_stack: Stack) -> Iterator[Ui]:
    yield from make_ui(browser, desk_stack)


def test_the_lead_run_shows_its_researcher_and_the_researcher_opens_on_top(desk_ui: Ui) -> None:
    ui = desk_ui
    ui.open()
    ui.send("some facts about otters")
    assert_settled(ui)
    ui.page.reload()  # the tree comes from the server's records
    last_assistant(ui).get_by_test_id("inspect").click()
    lead = ui.page.get_by_test_id("run-inspector")
    expect(lead).to_have_count(1)
    sub = lead.get_by_test_id("inspect-sub-agent")
    expect(sub).to_have_count(1)
    expect(sub).to_contain_text("researcher")
    expect(sub).to_contain_text("completed")
    expect(lead.get_by_test_id("inspect-tool-sub-agent")).to_contain_text("answered by the researcher run")
    sub.get_by_test_id("inspect").click()
    inspectors = ui.page.get_by_test_id("run-inspector")
    expect(inspectors).to_have_count(2)
    child = inspectors.nth(1)
    expect(child.get_by_test_id("inspect-parent")).to_contain_text("answers researcher (r1)")
    expect(child.get_by_test_id("inspect-answer")).to_contain_text("Otters use rocks as tools.")
    child.get_by_role("button", name="Close").click()
    expect(inspectors).to_have_count(1)
    assert_clean_console(ui)

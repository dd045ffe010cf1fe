"""A message sent while the user's one allowed run works waits for its slot, then is answered.

Its own server (`user_working_runs` 1, the default wait for a slot; the agent is
`tests.support.control_agents`, a scripted model): a run started over the API holds the user's
slot (its tool works until the test lets it go), and a chat sent in the browser meanwhile shows
"Starting the run…" with nothing to send, waits in the user's line at the server, and is answered
once the first run ends, with no error shown.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from stepline.api.identity import DEFAULT_LOCAL_USER
from stepline.store.run_slots import SlotKey
from tests.browser.conftest import Stack, Ui, make_stack, make_ui
from tests.browser.test_chat_ui import assert_clean_console
from tests.support import control_agents as agents


@pytest.fixture(scope="module")
def capped_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from make_stack(
        tmp_path_factory.mktemp("capped"),
        STEPLINE_AGENT="tests.support.control_agents:AGENT",
        STEPLINE_LIMITS='{"userWorkingRuns": 1}',
    )


@pytest.fixture
def capped_ui(browser: Browser, capped_stack: Stack) -> Iterator[Ui]:
    yield from make_ui(browser, capped_stack)


def test_a_message_past_the_cap_waits_for_the_slot_and_is_answered(capped_ui: Ui) -> None:
    ui, page = capped_ui, capped_ui.page
    waits = ui.stack.server.server.backend.services.slot_waits
    ui.open()
    with agents.tool_held() as let_go:
        with ui.stack.server.client() as http:
            first = http.post("/api/runs", json={"input": "held tool"})  # works until let go
        assert first.status_code == 202, first.text
        ui.send("hello while it works")
        box = page.get_by_test_id("composer-input")
        expect(box).to_have_attribute("placeholder", "Starting the run…")
        expect(page.get_by_test_id("send")).to_be_disabled()
        deadline = time.monotonic() + 15
        while waits.waiting(SlotKey("user", DEFAULT_LOCAL_USER)) != 1:  # in the user's line at the server
            assert time.monotonic() < deadline, "the chat never waited for the slot"
            time.sleep(0.02)
        let_go.set()
    expect(page.get_by_test_id("final-answer").last).to_contain_text("You said: hello while it works", timeout=30_000)
    expect(box).not_to_have_attribute("placeholder", "Starting the run…")
    expect(page.get_by_test_id("notice")).to_have_count(0)
    expect(page.get_by_test_id("message-error")).to_have_count(0)
    assert_clean_console(ui)
    assert [m["role"] for m in ui.stored()["messages"]] == ["user", "assistant"]

"""An approval the server does not know for the page's user: the card's 404 (its own server: two
users from STEPLINE_DEV_TOKENS; one dev server at a time per process, moto's state is global).

The page shows alice's waiting approval; then its requests carry bob's token (someone signed in
as another user in another tab, and the tabs share the token). To bob the approval is unknown: the
server answers 404 with the same body as for an id that does not exist, decides nothing, and alice
can still decide it once she is back.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import Stack, Ui, make_stack, make_ui
from tests.browser.test_chat_ui import (
    RESOURCE_ERROR,
    answer_text,
    assert_clean_console,
    assert_settled,
    last_assistant,
    open_trace,
)

ALICE = {"authorization": "Bearer tok-alice"}
BOB = {"authorization": "Bearer tok-bob"}


@pytest.fixture(scope="module")
def two_users_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from make_stack(tmp_path_factory.mktemp("two-users"), STEPLINE_DEV_TOKENS="tok-alice:alice,tok-bob:bob")


@pytest.fixture
def alice(browser: Browser, two_users_stack: Stack) -> Iterator[Ui]:
    for ui in make_ui(browser, two_users_stack):
        ui.page.context.set_extra_http_headers(ALICE)
        yield ui


def test_an_approval_unknown_to_the_user_reads_no_longer_exists(alice: Ui) -> None:
    ui = alice
    ui.open()
    ui.send("write a note")
    card = last_assistant(ui).get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-approval-state", "requested")
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "ready")
    chat_id, approval = ui.chat_id, str(card.get_attribute("data-approval-id"))

    ui.page.context.set_extra_http_headers(BOB)
    card.get_by_role("button", name="Approve").click()
    # To the page's user there is no such run: the turn reads interrupted, its trace closed.
    expect(ui.page.get_by_test_id("execution-trace")).to_have_attribute("data-trace-state", "incomplete")
    open_trace(ui)
    expect(card).to_have_attribute("data-approval-state", "not-found")
    expect(card).to_contain_text("This approval no longer exists")
    expect(last_assistant(ui).get_by_test_id("tool-status")).to_have_text("unknown approval")  # not "approved"
    expect(card.get_by_role("button", name="Approve")).to_have_count(0)
    expect(ui.page.get_by_role("alert")).to_contain_text("in this chat")  # the server's words, not a crash
    assert ("POST", "/api/chat", 404) in ui.stack.proxy.requests
    ui.screenshot("approval-not-found")
    # Nothing was decided: the run still waits for alice.
    with ui.stack.server.client("alice") as http:
        stored = http.get(f"/api/conversations/{chat_id}").json()
        assert stored["status"] == "waiting_approval"
        assert http.get(f"/api/conversations/{chat_id}").status_code == 200
    with ui.stack.server.client("bob") as http:
        assert http.post(f"/api/approvals/{approval}", json={"approved": True}).status_code == 404

    # Alice is back: the page reads her chat again, and the same card decides it.
    ui.page.context.set_extra_http_headers(ALICE)
    ui.page.reload()
    expect(card).to_have_attribute("data-approval-state", "requested")
    card.get_by_role("button", name="Approve").click()
    assert_settled(ui)
    assert "The note is handled." in answer_text(ui)
    open_trace(ui)
    expect(card).to_have_attribute("data-approval-state", "approved")
    with ui.stack.server.client("alice") as http:
        parts = http.get(f"/api/conversations/{chat_id}").json()["messages"][-1]["parts"]
    tool = [p for p in parts if p["type"] == "tool-write_file"][0]
    assert tool["state"] == "output-available" and tool["approval"]["approved"] is True
    assert_clean_console(ui, RESOURCE_ERROR)

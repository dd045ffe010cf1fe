"""Parts the trace has no dedicated block for, and the sidebar's delete, against the real server:
sources listed once per page across a message, an unknown `data-*` part's fallback, a deleted
conversation gone after a reload."""

from __future__ import annotations

import json
import uuid

from playwright.sync_api import expect

from stepline.protocol.sse import SseDecoder
from tests.browser.book import AGAIN_FIRST, AGAIN_LISTS, AGAIN_SECOND
from tests.browser.conftest import Ui
from tests.browser.test_chat_ui import (
    RESOURCE_ERROR,
    answer_text,
    assert_clean_console,
    assert_settled,
    open_trace,
    trace,
)


def test_a_page_cited_again_is_listed_once_per_message(ui: Ui) -> None:
    ui.open()
    ui.send("cite again")
    assert_settled(ui)
    assert "Cited again." in answer_text(ui)
    open_trace(ui)
    lists = trace(ui).get_by_test_id("source-list")
    expect(lists).to_have_count(len(AGAIN_LISTS))
    for i, urls in enumerate(AGAIN_LISTS):
        links = lists.nth(i).locator("li a")
        expect(links).to_have_count(len(urls))
        assert [links.nth(j).get_attribute("href") for j in range(len(urls))] == urls
    ui.screenshot("sources")
    # The stored message keeps every part: only the list is deduplicated.
    stored = [p["url"] for p in ui.stored()["messages"][-1]["parts"] if p["type"] == "source-url"]
    assert stored == AGAIN_FIRST + AGAIN_SECOND
    assert_clean_console(ui)


def post_chat(ui: Ui, chat_id: str, parts: list[dict[str, object]]) -> list[dict[str, object]]:
    """A new message through the HTTP API (another client of the same user), read to its end."""
    body = {
        "id": chat_id,
        "trigger": "submit-message",
        "messages": [{"id": f"u-{uuid.uuid4().hex}", "role": "user", "parts": parts}],
    }
    decoder = SseDecoder()
    chunks: list[dict[str, object]] = []
    with ui.stack.server.client() as http, http.stream("POST", "/api/chat", json=body) as response:
        assert response.status_code == 200, response.read()
        for raw in response.iter_text():
            for event in decoder.feed(raw):
                if event.data and event.data != "[DONE]":
                    chunks.append(json.loads(event.data))
    return chunks


def test_an_unknown_data_part_in_a_message_shows_a_readable_fallback(ui: Ui) -> None:
    chat_id = f"chat-{uuid.uuid4()}"
    ticket: dict[str, object] = {"type": "data-acme-ticket", "data": {"ticket": "ACME-42", "priority": "high"}}
    chunks = post_chat(ui, chat_id, [{"type": "text", "text": "hello there"}, ticket])
    assert chunks[-1]["type"] == "finish"
    stored = ui.stored(chat_id)["messages"][0]["parts"]
    assert stored[1] == ticket  # the server keeps it as it came
    ui.open(f"/c/{chat_id}")
    user = ui.page.get_by_test_id("user-message")
    expect(user).to_contain_text("hello there")
    fallback = user.get_by_test_id("part-fallback")
    expect(fallback).to_have_attribute("data-part-type", "data-acme-ticket")
    expect(fallback.locator("summary")).to_contain_text("data-acme-ticket")
    fallback.locator("summary").click()
    expect(fallback.locator(".json")).to_contain_text('"ticket": "ACME-42"')  # the raw data, for diagnosis
    assert "Hello from the script" in answer_text(ui)  # the rest of the chat is as usual
    ui.screenshot("data-part-fallback")
    assert_clean_console(ui)


def conversation_ids(ui: Ui) -> list[str]:
    with ui.stack.server.client() as http:
        return [c["id"] for c in http.get("/api/conversations", params={"limit": 100}).json()["conversations"]]


def test_a_conversation_deleted_from_the_sidebar_is_gone_after_a_reload(ui: Ui) -> None:
    ui.open()
    ui.send("hello there")
    assert_settled(ui)
    deleted = ui.chat_id
    ui.page.get_by_test_id("new-chat").click()
    ui.send("hello again")
    expect(ui.page.get_by_test_id("assistant-message")).to_have_count(1)
    assert_settled(ui)
    kept = ui.chat_id
    item = ui.page.locator(f"[data-testid=conversation-item][data-conversation-id='{deleted}']")
    expect(item).to_have_attribute("data-indicator", "none", timeout=30_000)
    # Delete the one not open: the open chat stays as it is.
    item.hover()
    item.get_by_role("button", name="Delete conversation").click()
    expect(item).to_have_count(0)
    assert ui.chat_id == kept
    expect(ui.page.get_by_test_id("assistant-message")).to_have_count(1)
    assert ("DELETE", f"/api/conversations/{deleted}", 204) in ui.stack.proxy.requests
    ids = conversation_ids(ui)
    assert deleted not in ids and kept in ids
    ui.page.reload()
    expect(ui.page.locator(f"[data-conversation-id='{kept}']")).to_have_count(1)
    expect(item).to_have_count(0)
    # Its address now opens an empty chat, not the deleted messages.
    ui.open(f"/c/{deleted}")
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-id", deleted)
    expect(ui.page.get_by_test_id("user-message")).to_have_count(0)
    expect(ui.page.locator(f"[data-conversation-id='{deleted}']")).to_have_count(0)
    assert_clean_console(ui, RESOURCE_ERROR)  # its GET answers 404: the page starts it anew


def test_a_compaction_shows_as_earlier_context_summarized_readable_on_click(ui: Ui) -> None:
    chat_id = f"chat-{uuid.uuid4()}"
    summary: dict[str, object] = {
        "type": "data-context-summary",
        "id": "summary-run-1-1",
        "data": {
            "summary": "The user asked for **six** reads.",
            "index": 1,
            "tokensBefore": 26000,
            "tokensAfter": 9000,
        },
    }
    post_chat(ui, chat_id, [{"type": "text", "text": "carry on"}, summary])
    ui.open(f"/c/{chat_id}")
    block = ui.page.get_by_test_id("context-summary")
    expect(block.locator("summary")).to_contain_text("Earlier context summarized")
    expect(block.locator("summary")).to_contain_text("26,000 → 9,000 tokens")
    expect(block.get_by_test_id("context-summary-text")).not_to_be_visible()
    block.locator("summary").click()
    expect(block.get_by_test_id("context-summary-text")).to_contain_text("The user asked for six reads.")
    assert_clean_console(ui)

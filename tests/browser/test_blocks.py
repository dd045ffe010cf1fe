"""The dedicated blocks and what had no browser test yet: WebSearchBlock and CodeInterpreterBlock
(a scripted model emitting provider-executed `web_search` / `code_interpreter` parts), sources
deduplicated by URL, file parts and their previews, the `custom` / `data-*` fallbacks, two
approvals in one step (and how a collapsed trace tells approved from denied), the approval card's
409, and the sidebar's delete. Screenshots go to docs/screenshots/ (with STEPLINE_SCREENSHOTS=1)."""

from __future__ import annotations

from collections.abc import Iterator

from playwright.sync_api import Route, expect

from tests.browser.book import SEARCH_URLS
from tests.browser.conftest import Ui
from tests.browser.test_chat_ui import (
    RESOURCE_ERROR,
    answer_text,
    assert_clean_console,
    assert_settled,
    last_assistant,
    open_trace,
    trace,
)


def stalled_list(ui: Ui) -> Iterator[list[Route]]:
    """Hold the sidebar's polls of `GET /api/conversations` (the page learns nothing new from them)."""
    held: list[Route] = []
    ui.page.route("**/api/conversations?*", lambda route: held.append(route))
    yield held


# -- web search, code ---------------------------------------------------------------------------------


def test_a_web_search_shows_its_query_and_one_plain_url_per_line(ui: Ui) -> None:
    ui.open()
    ui.send("search the web for durable agents")
    assert_settled(ui)
    assert "durable agents run well on Step Functions" in answer_text(ui)
    open_trace(ui)
    block = last_assistant(ui).get_by_test_id("web-search-block")
    expect(block).to_have_count(1)
    expect(block.get_by_test_id("web-search-query")).to_have_text("durable AI agents on AWS")
    expect(block.get_by_test_id("tool-status")).to_have_text("done")
    urls = block.get_by_test_id("web-search-urls")
    expect(urls).to_be_hidden()  # collapsed until opened
    block.locator("summary").click()
    # The output's URLs merged with the source-url parts after the tool, each URL once, plain text.
    expect(urls).to_have_text("\n".join(SEARCH_URLS))
    expect(urls.locator("a")).to_have_count(0)
    # The sources were the search's: no separate source list for them.
    expect(trace(ui).get_by_test_id("source-list")).to_have_count(0)
    stored = [p for p in ui.stored()["messages"][-1]["parts"] if p["type"] == "dynamic-tool"][0]
    assert (stored["toolName"], stored["providerExecuted"]) == ("web_search", True)
    ui.screenshot("web-search")
    assert_clean_console(ui)


def test_code_interpreter_shows_language_code_and_output(ui: Ui) -> None:
    ui.open()
    ui.send("run the code please")
    assert_settled(ui)
    open_trace(ui)
    block = last_assistant(ui).get_by_test_id("code-interpreter-block")
    expect(block).to_have_attribute("data-tool-state", "output-available")
    expect(block.locator("details")).not_to_have_attribute("open", "")  # collapsed by default
    expect(block.locator("summary path")).to_have_attribute("d", "M4 17l6-5-6-5M12 19h8")  # the terminal icon
    block.locator("summary").click()
    expect(block.get_by_test_id("code-language")).to_have_text("python")
    expect(block.get_by_test_id("code-source")).to_have_text("print(sum(range(1, 101)))")
    expect(block.get_by_test_id("code-output")).to_have_text("5050")
    expect(block.get_by_test_id("code-error")).to_have_count(0)
    ui.screenshot("code-interpreter")
    assert_clean_console(ui)


def test_anthropic_code_execution_shows_its_bash_command_in_the_code_block(ui: Ui) -> None:
    ui.open()
    ui.send("run bash for me")
    assert_settled(ui)
    open_trace(ui)
    block = last_assistant(ui).get_by_test_id("code-interpreter-block")
    expect(block).to_have_attribute("data-tool-state", "output-available")
    block.locator("summary").click()
    expect(block.get_by_test_id("code-language")).to_have_text("bash")
    expect(block.get_by_test_id("code-source")).to_have_text("ls /tmp | wc -l")
    expect(block.get_by_test_id("code-output")).to_have_text("3")
    expect(block.get_by_test_id("code-stderr")).to_have_count(0)
    assert_clean_console(ui)


def test_code_that_fails_shows_its_error_apart_from_the_code(ui: Ui) -> None:
    ui.open()
    ui.send("try some broken code")
    assert_settled(ui)
    open_trace(ui)
    block = last_assistant(ui).get_by_test_id("code-interpreter-block")
    expect(block).to_have_attribute("data-tool-state", "output-error")
    expect(block.get_by_test_id("tool-status")).to_have_text("failed")
    block.locator("summary").click()
    expect(block.get_by_test_id("code-source")).to_have_text("print(undefined_name)")
    expect(block.get_by_test_id("code-error")).to_contain_text("NameError")
    expect(block.get_by_test_id("code-output")).to_have_count(0)
    expect(last_assistant(ui).get_by_test_id("message-error")).to_have_count(0)  # the tool's error, not the run's
    assert_clean_console(ui)


# -- sources, files, fallbacks ---------------------------------------------------------------------


def test_sources_are_listed_once_per_url(ui: Ui) -> None:
    ui.open()
    ui.send("cite sources for me")
    assert_settled(ui)
    open_trace(ui)
    items = trace(ui).get_by_test_id("source-list").locator("li")
    expect(items).to_have_count(3)  # a, b (a again is dropped) and the document
    expect(items.nth(0).locator("a")).to_have_attribute("href", "https://example.com/a")
    expect(items.nth(1).locator("a")).to_have_attribute("href", "https://example.com/b")
    expect(items.nth(2)).to_contain_text("Handbook")
    assert_clean_console(ui)


def test_file_parts_open_in_previews_and_keep_a_download(ui: Ui) -> None:
    ui.open()
    ui.send("make files")
    assert_settled(ui)
    assert "Here are the files." in answer_text(ui)
    artifacts = last_assistant(ui).get_by_test_id("artifact-card")
    expect(artifacts).to_have_count(3)
    dialog = ui.page.get_by_test_id("preview-dialog")

    artifacts.nth(0).click()
    expect(dialog).to_have_attribute("data-preview-kind", "image")
    image = dialog.get_by_test_id("preview-image")
    expect(image).to_be_visible()
    assert image.evaluate("img => img.naturalWidth") == 1
    download = dialog.get_by_test_id("preview-download")
    assert str(download.get_attribute("href")).startswith("data:image/png;base64,")
    assert download.get_attribute("target") is None
    dialog.get_by_test_id("preview-close").click()
    expect(dialog).to_have_count(0)

    artifacts.nth(1).click()
    expect(dialog).to_have_attribute("data-preview-kind", "markdown")
    expect(dialog.get_by_test_id("preview-markdown").locator("h1")).to_have_text("Findings")
    expect(dialog.get_by_test_id("preview-markdown").locator("em")).to_have_text("serverless")
    ui.screenshot("file-preview")
    ui.page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)

    artifacts.nth(2).click()
    expect(dialog).to_have_attribute("data-preview-kind", "pdf")
    frame = dialog.get_by_test_id("preview-pdf")
    assert str(frame.get_attribute("src")).startswith("blob:")
    dialog.get_by_test_id("preview-close").click()

    open_trace(ui)
    cards = trace(ui).get_by_test_id("file-card")
    expect(cards).to_have_count(3)
    expect(cards.nth(0)).to_have_attribute("data-media-type", "image/png")
    # In the trace an image shows itself; a file that is not one shows its media type.
    expect(cards.nth(0).locator("img")).to_have_count(1)
    for i, media_type in ((1, "text/markdown"), (2, "application/pdf")):
        expect(cards.nth(i).locator("img")).to_have_count(0)
        expect(cards.nth(i)).to_contain_text(media_type)
    cards.nth(1).get_by_test_id("file-open").click()  # a trace card opens the same preview
    expect(dialog).to_have_attribute("data-preview-kind", "markdown")
    dialog.get_by_test_id("preview-close").click()
    assert len(ui.page.context.pages) == 1, "nothing opened a tab"
    assert_clean_console(ui)


def test_a_custom_part_has_a_diagnosable_fallback(ui: Ui) -> None:
    ui.open()
    ui.send("a custom event")
    assert_settled(ui)
    open_trace(ui)
    fallback = trace(ui).get_by_test_id("part-fallback")
    expect(fallback).to_have_attribute("data-part-type", "custom")
    expect(fallback.locator("summary")).to_contain_text("acme.progress")
    expect(fallback.get_by_test_id("part-fallback")).to_have_count(0)
    fallback.locator("summary").click()
    expect(fallback.locator(".json")).to_contain_text('"kind": "acme.progress"')  # the raw data, for diagnosis
    stored = [p for p in ui.stored()["messages"][-1]["parts"] if p["type"] == "custom"]
    assert stored == [{"type": "custom", "kind": "acme.progress"}]
    assert_clean_console(ui)


# -- approvals ---------------------------------------------------------------------------------------


def test_two_approvals_in_one_step_and_a_collapsed_trace_tells_approved_from_denied(ui: Ui) -> None:
    ui.open()
    ui.send("two approvals please")
    cards = last_assistant(ui).get_by_test_id("approval-card")
    expect(cards).to_have_count(2)
    # The stream ended at the wait: the decisions take the stock path (one continuation for both).
    expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "ready")
    expect(cards.nth(0)).to_have_attribute("data-approval-state", "requested")
    expect(cards.nth(1)).to_have_attribute("data-approval-state", "requested")
    cards.nth(0).get_by_role("button", name="Approve").click()
    # One of two answered: nothing is sent yet, the other card still asks.
    expect(cards.nth(1)).to_have_attribute("data-approval-state", "requested")
    expect(trace(ui)).to_have_attribute("data-trace-state", "waiting")
    cards.nth(1).get_by_placeholder("Reason (optional)").fill("not this one")
    cards.nth(1).get_by_role("button", name="Deny").click()
    assert_settled(ui)
    assert "Both decided." in answer_text(ui)
    expect(trace(ui).get_by_test_id("trace-approved")).to_have_text("1 approved")
    expect(trace(ui).get_by_test_id("trace-denied")).to_have_text("1 denied")
    ui.screenshot("approved-and-denied")
    chats = [r for r in ui.stack.proxy.requests if r[:2] == ("POST", "/api/chat")]
    assert [r[2] for r in chats] == [200, 200], "the send, then one continuation with both decisions"
    open_trace(ui)
    blocks = last_assistant(ui).get_by_test_id("tool-block")
    expect(blocks.nth(0)).to_have_attribute("data-tool-state", "output-available")
    expect(blocks.nth(1)).to_have_attribute("data-tool-state", "output-denied")
    tools = [p for p in ui.stored()["messages"][-1]["parts"] if p["type"] == "tool-write_file"]
    assert [t["state"] for t in tools] == ["output-available", "output-denied"]
    assert_clean_console(ui)


def test_a_denied_tool_reads_denied_when_the_trace_is_collapsed(ui: Ui) -> None:
    ui.open()
    ui.send("write it down")
    last_assistant(ui).get_by_test_id("approval-card").get_by_role("button", name="Deny").click()
    assert_settled(ui)
    expect(trace(ui).get_by_test_id("trace-denied")).to_have_text("1 denied")
    expect(trace(ui).get_by_test_id("trace-approved")).to_have_count(0)
    assert_clean_console(ui)


def test_the_card_says_already_decided_when_the_server_answers_409(ui: Ui) -> None:
    ui.open()
    for _ in stalled_list(ui):
        ui.send("write a note")
        card = last_assistant(ui).get_by_test_id("approval-card")
        expect(card).to_have_attribute("data-approval-state", "requested")
        expect(ui.page.get_by_test_id("chat")).to_have_attribute("data-chat-status", "ready")
        approval = str(card.get_attribute("data-approval-id"))
        # Someone else denies it (another tab, the webhook) while this page still shows it open.
        with ui.stack.server.client() as http:
            assert http.post(f"/api/approvals/{approval}", json={"approved": False}).status_code == 200
        card.get_by_role("button", name="Approve").click()
        expect(ui.page.get_by_role("alert")).to_contain_text("already decided the other way")
        open_trace(ui)  # the turn ended without its decision: the trace collapsed
        expect(card).to_have_attribute("data-approval-state", "conflict")
        expect(card).to_contain_text("Already decided the other way")
        expect(card.get_by_role("button", name="Approve")).to_have_count(0)
        expect(trace(ui).get_by_test_id("trace-approved")).to_have_count(0)  # not counted as approved
        assert ("POST", "/api/chat", 409) in ui.stack.proxy.requests
    assert_clean_console(ui, RESOURCE_ERROR)


# -- the sidebar -------------------------------------------------------------------------------------


def test_the_sidebar_deletes_a_conversation(ui: Ui) -> None:
    ui.open()
    ui.send("hello there")
    assert_settled(ui)
    chat_id = ui.chat_id
    item = ui.page.locator(f"[data-testid=conversation-item][data-conversation-id='{chat_id}']")
    expect(item).to_have_attribute("data-indicator", "none", timeout=30_000)  # offered once the run is over
    item.hover()  # the delete button shows on hover
    item.get_by_role("button", name="Delete conversation").click()
    expect(item).to_have_count(0)
    expect(ui.page.get_by_test_id("assistant-message")).to_have_count(0)  # the open chat was it: a new one
    assert ui.chat_id != chat_id
    with ui.stack.server.client() as http:
        assert http.get(f"/api/conversations/{chat_id}").status_code == 404
    assert ("DELETE", f"/api/conversations/{chat_id}", 204) in ui.stack.proxy.requests
    assert_clean_console(ui)

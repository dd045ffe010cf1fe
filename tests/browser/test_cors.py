"""A front end on another origin calls the API from a real browser (STEPLINE_CORS_ORIGINS).

The page is served from the proxy's origin; it calls the dev server's own origin directly, the way
a front end on its own domain calls a deployed API. Chromium enforces CORS: the preflight, the
headers the client may read, and the refusal of an origin that is not listed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from stepline.protocol.sse import SseDecoder
from tests.browser.book import BOOK_SCRIPTS
from tests.browser.proxy import FaultProxy
from tests.support.server import Running, config, running, write_book

CALL = """async ([api, chatId]) => {
  const auth = { authorization: 'Bearer tok-a' };
  try {
    const chat = await fetch(api + '/api/chat', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ id: chatId, trigger: 'submit-message', messages: [
        { id: 'u-' + chatId, role: 'user', parts: [{ type: 'text', text: 'hello' }] }] }),
    });
    const body = await chat.text();
    const resume = await fetch(api + '/api/chat/' + chatId + '/stream', {
      headers: { ...auth, 'last-event-id': '1.0' },
    });
    return { status: chat.status, protocol: chat.headers.get('x-vercel-ai-ui-message-stream'), body,
             resume: resume.status, replay: await resume.text() };
  } catch (error) {
    return { error: String(error) };
  }
}"""


@pytest.fixture(scope="module")
def origins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FaultProxy, Running]]:
    proxy = FaultProxy(("127.0.0.1", 9))  # its origin is known now; its upstream once the server is up
    try:
        model = write_book(
            Path(tmp_path_factory.mktemp("cors")) / "book.json", BOOK_SCRIPTS["scripts"], BOOK_SCRIPTS["fallback"]
        )
        with running(config(model, tokens={"tok-a": "alice"}, STEPLINE_CORS_ORIGINS=proxy.url)) as server:
            proxy.upstream = ("127.0.0.1", int(server.url.rsplit(":", 1)[1]))
            yield proxy, server
    finally:
        proxy.close()


@contextmanager
def page_at(browser: Browser, url: str) -> Iterator[Page]:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(url)
        yield page
    finally:
        context.close()


def call(page: Page, api: str, chat_id: str) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(CALL, [api, chat_id])
    return result


def test_a_listed_origin_streams_a_chat_and_resumes_it(browser: Browser, origins: tuple[FaultProxy, Running]) -> None:
    proxy, server = origins
    with page_at(browser, proxy.url + "/") as page:
        result = call(page, server.url, "cors-listed")
        assert "error" not in result, result
        assert (result["status"], result["protocol"], result["resume"]) == (200, "v1", 200)
        events = [e.data for e in SseDecoder().feed(result["body"])]
        assert '"type":"start"' in events[0] and '"type":"finish"' in events[-2] and events[-1] == "[DONE]"
        replay = [e.data for e in SseDecoder().feed(result["replay"])]
        assert replay == events[1:], "the resume with Last-Event-ID 1.0 sends the rest, read by the page"
    with server.client("alice") as http:
        assert http.get("/api/conversations/cors-listed").status_code == 200


def test_an_origin_not_listed_cannot_call_and_starts_nothing(
    browser: Browser, origins: tuple[FaultProxy, Running]
) -> None:
    proxy, server = origins
    other = proxy.url.replace("127.0.0.1", "localhost")  # same host, another origin
    with page_at(browser, other + "/") as page:
        result = call(page, server.url, "cors-refused")
        assert result.keys() == {"error"} and "Failed to fetch" in result["error"], result
    with server.client("alice") as http:  # the preflight was refused, so the POST never left the browser
        assert http.get("/api/conversations/cors-refused").status_code == 404

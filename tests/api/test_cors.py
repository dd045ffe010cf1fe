"""Cross-origin calls (STEPLINE_CORS_ORIGINS): preflights, the headers a browser needs, other origins.

The browser's side of the same thing is tests/browser/test_cors.py; the default (no other origin)
is checked in test_chat_api.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stepline.protocol.sse import SseDecoder
from tests.support.server import Running, config, running

APP = "https://app.example.com"
TOKENS = {"tok-a": "alice"}


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running(config(tokens=TOKENS, STEPLINE_CORS_ORIGINS=f"{APP},http://localhost:3000")) as live:
        yield live


def preflight(server: Running, path: str, origin: str, method: str = "POST", headers: str = "") -> dict[str, str]:
    request = {"origin": origin, "access-control-request-method": method}
    if headers:
        request["access-control-request-headers"] = headers
    with server.client() as http:
        response = http.options(path, headers=request)
    return {
        "status": str(response.status_code),
        **{k: v for k, v in response.headers.items() if k.startswith("access-")},
    }


def test_a_listed_origin_is_admitted_to_every_route_with_the_headers_the_client_sends(server: Running) -> None:
    for path, method in [
        ("/api/chat", "POST"),
        ("/api/chat/c1/stream", "GET"),
        ("/api/approvals/ap-1", "POST"),
        ("/api/conversations/c1", "DELETE"),
    ]:
        answer = preflight(server, path, APP, method, "authorization,content-type,last-event-id")
        assert answer["status"] == "200", (path, answer)
        assert answer["access-control-allow-origin"] == APP
        assert method in answer["access-control-allow-methods"]
        allowed = answer["access-control-allow-headers"].lower()
        assert {"authorization", "content-type", "last-event-id"} <= {h.strip() for h in allowed.split(",")}
        assert "access-control-allow-credentials" not in answer  # bearer tokens, never cookies
        assert answer["access-control-max-age"] == "600"


def test_the_stream_exposes_its_protocol_header_to_a_listed_origin(server: Running) -> None:
    body = {
        "id": "cors-1",
        "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}],
    }
    headers = {"origin": APP, "authorization": "Bearer tok-a"}
    with server.client() as http:
        response = http.post("/api/chat", json=body, headers=headers)
        other = http.get("/api/conversations", headers={**headers, "origin": "https://evil.example"})
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == APP
    assert "x-vercel-ai-ui-message-stream" in response.headers["access-control-expose-headers"].lower()
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    events = list(SseDecoder().feed(response.text))
    assert events[-1].data == "[DONE]" and '"type":"start"' in events[0].data
    # Another origin: the request is served (a server cannot stop it), but the browser is not told
    # it may read the answer.
    assert other.status_code == 200 and "access-control-allow-origin" not in other.headers


def test_an_origin_not_listed_is_refused_its_preflight(server: Running) -> None:
    answer = preflight(server, "/api/chat", "https://evil.example", "POST", "content-type")
    assert answer["status"] == "400"
    assert "access-control-allow-origin" not in answer

"""Bad input over HTTP: each class found by fuzzing (issue 12) is a 4xx naming the field, and stores nothing.

Every test here failed before the validation boundary (`stepline.api.bodies`,
`stepline.protocol.json_limits`, `stepline.protocol._request_rules`): with a 500, a plain-text
413, a 422 in the OpenAPI document, or a request that was accepted and stored.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stepline.protocol.sse import decode_ui_message_stream
from tests.support.server import Running, config, running

JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running(config()) as live:
        yield live


def user_message(text: str = "hello", message_id: str = "u1", **fields: Any) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}], **fields}


def chat_body(chat_id: str, *messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"id": chat_id, "messages": list(messages) or [user_message()], "trigger": "submit-message", **fields}


def refused(response: httpx.Response, status: int, named: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    message = response.json()["error"]["message"]
    assert named in message, message


def not_stored(client: httpx.Client, chat_id: str) -> None:
    assert client.get(f"/api/conversations/{chat_id}").status_code == 404, "the refused request wrote nothing"


@pytest.mark.parametrize(
    "cursor",
    [
        "%%%not-base64",
        base64.urlsafe_b64encode(b"not json").decode(),
        base64.urlsafe_b64encode(b"[1,2]").decode(),
        base64.urlsafe_b64encode(json.dumps({"pk": {"S": "U#someone-else#C#x"}, "sk": {"S": "C"}}).encode()).decode(),
        base64.urlsafe_b64encode(
            json.dumps({k: {"S": f"U#mallory#{k}"} for k in ("pk", "sk", "gsi1pk", "gsi1sk")}).encode()
        ).decode(),
        "A" * 3000,
    ],
)
def test_a_malformed_or_forged_cursor_is_a_400_naming_cursor(server: Running, cursor: str) -> None:
    with server.client() as client:
        refused(client.get("/api/conversations", params={"cursor": cursor}), 400, "cursor")


def test_a_real_cursor_pages_through(server: Running) -> None:
    with server.client() as client:
        for index in range(3):
            assert client.post("/api/chat", json=chat_body(f"page-{index}")).status_code == 200
        first = client.get("/api/conversations", params={"limit": 2}).json()
        second = client.get("/api/conversations", params={"limit": 2, "cursor": first["nextCursor"]})
    assert second.status_code == 200, second.text
    ids = [c["id"] for c in first["conversations"] + second.json()["conversations"]]
    assert len(ids) == len(set(ids)) >= 3


@pytest.mark.parametrize("route", ["/api/chat", "/api/approvals/appr-1", "/api/completion"])
def test_a_deeply_nested_body_is_a_400_not_a_recursion_error(server: Running, route: str) -> None:
    deep = "[" * 20_000 + "]" * 20_000
    shallow_enough_to_parse = "[" * 500 + "]" * 500
    with server.client() as client:
        for value in (deep, shallow_enough_to_parse):
            body = '{"id":"deep","trigger":"submit-message","approved":true,"prompt":"x","messages":' + value + "}"
            refused(client.post(route, content=body.encode(), headers=JSON), 400, "nested deeper than 64 levels")
        not_stored(client, "deep")


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (
            b'{"id":"sur-1","trigger":"submit-message","messages":[{"id":"u1","role":"user",'
            b'"parts":[{"type":"text","text":"a\\ud800b"}]}]}',
            "messages[0].parts[0].text: is not valid Unicode",
        ),
        (
            b'{"id":"sur-2","trigger":"submit-message","messages":[{"id":"\\udfff","role":"user",'
            b'"parts":[{"type":"text","text":"x"}]}]}',
            "messages[0].id: is not valid Unicode",
        ),
        (b'{"id":"sur-3\\ud800","trigger":"submit-message","messages":[]}', "id: is not valid Unicode"),
    ],
)
def test_a_lone_surrogate_is_a_400_naming_the_field(server: Running, body: bytes, named: str) -> None:
    with server.client() as client:
        refused(client.post("/api/chat", content=body, headers=JSON), 400, named)
        not_stored(client, "sur-1")
        reason = client.post("/api/approvals/appr-1", content=b'{"approved":true,"reason":"\\ud800"}', headers=JSON)
    refused(reason, 400, "reason: is not valid Unicode")


@pytest.mark.parametrize(
    ("message", "named"),
    [
        (user_message(message_id=""), "messages[0].id: must be 1-200 characters"),
        (user_message(message_id="m" * 1_000_000), "messages[0].id: must be 1-200 characters"),
        (user_message(metadata=["not", "an", "object"]), "messages[0].metadata: must be an object"),
        (user_message(metadata="text"), "messages[0].metadata: must be an object"),
    ],
)
def test_ids_the_store_cannot_key_and_non_object_metadata_are_400s(
    server: Running, message: dict[str, Any], named: str
) -> None:
    with server.client() as client:
        refused(client.post("/api/chat", json=chat_body("ids-chat", message)), 400, named)
        not_stored(client, "ids-chat")


def test_regenerate_naming_a_message_not_in_the_chat_is_a_400_and_keeps_the_answer(server: Running) -> None:
    with server.client() as client:
        first = client.post("/api/chat", json=chat_body("regen-unknown"))
        answer = decode_ui_message_stream(first.text)[0].message_id
        body = chat_body("regen-unknown", trigger="regenerate-message", messageId="not-in-this-chat")
        regenerated = client.post("/api/chat", json=body)
        messages = client.get("/api/conversations/regen-unknown").json()["messages"]
    refused(regenerated, 400, "messageId")
    assert [m["id"] for m in messages] == ["u1", answer], "the stored answer was not superseded"


def test_a_body_over_the_limit_is_a_json_413_with_or_without_content_length(server: Running) -> None:
    over = b"x" * (6 * 1024 * 1024 + 1)

    def chunked() -> Iterator[bytes]:
        for _ in range(7):
            yield b" " * (1024 * 1024)

    with server.client() as client:
        for route in ("/api/chat", "/api/approvals/appr-1", "/api/completion"):
            refused(client.post(route, content=over, headers=JSON), 413, "body: larger than the limit")
        refused(client.post("/api/chat", content=chunked(), headers=JSON), 413, "body: larger than the limit")


@pytest.mark.parametrize(
    "url", ["javascript:alert(document.cookie)", "  JAVASCRIPT:alert(1)", "java\nscript:alert(1)", "vbscript:msgbox"]
)
def test_a_file_part_with_a_script_url_is_refused_and_not_stored(server: Running, url: str) -> None:
    part = {"type": "file", "mediaType": "text/html", "filename": "x.html", "url": url}
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "see"}, part]}
    with server.client() as client:
        refused(client.post("/api/chat", json=chat_body("js-url", message)), 400, "messages[0].parts[1].url")
        not_stored(client, "js-url")


def test_the_openapi_document_advertises_the_400_error_shape_the_app_answers(server: Running) -> None:
    with server.client() as client:
        spec = client.get("/api/openapi.json").json()
        answered = client.post("/api/approvals/appr-1", json={"approved": "yes"})
    assert "422" not in json.dumps(spec["paths"]), "the app never answers 422"
    error = spec["components"]["schemas"]["ErrorBody"]
    assert set(error["properties"]) == {"error"}
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            if path != "/api/health":
                content = operation["responses"]["400"]["content"]["application/json"]
                assert content["schema"] == {"$ref": "#/components/schemas/ErrorBody"}, (method, path)
    refused(answered, 400, "approved")
    assert set(answered.json()) == {"error"} and set(answered.json()["error"]) == {"status", "message"}

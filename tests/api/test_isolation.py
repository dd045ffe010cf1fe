"""User B against every endpoint with user A's ids: exactly what an id that does not exist gets."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stepline.llm.registry import DEMO_BOOK
from tests.api.test_chat_api import approval_request, send, stored, user_message, wait_status
from tests.support.server import Running, config, running

SECRET = "pineapple-secret-42"


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    tokens = {"token-a": "user-a", "token-b": "user-b"}
    with running(config(f"scripted:{DEMO_BOOK}", tokens=tokens)) as live:
        yield live


@pytest.fixture(scope="module")
def a_ids(server: Running) -> dict[str, str]:
    """User A's conversation waiting for an approval, and a finished one with an artifact."""
    with server.client("user-a") as a:
        waiting = approval_request(send(a, "a-waiting", f"write a note about {SECRET}"))
        wait_status(a, "a-waiting", "waiting_approval")
        saving = approval_request(send(a, "a-artifact", f"save an artifact of {SECRET}"))
        wait_status(a, "a-artifact", "waiting_approval")
        assert a.post(f"/api/approvals/{saving['approvalId']}", json={"approved": True}).status_code == 200
        done = wait_status(a, "a-artifact", "idle")
        waiting_chat = stored(a, "a-waiting")
    artifact = next(p["output"] for p in done["messages"][-1]["parts"] if p.get("type") == "tool-save_artifact")
    return {
        "chat": "a-waiting",
        "message": waiting_chat["messages"][-1]["id"],
        "run": waiting_chat["activeRunId"],
        "approval": waiting["approvalId"],
        "artifact": artifact["artifactId"],
    }


def requests(ids: dict[str, str]) -> list[tuple[str, str, dict[str, Any]]]:
    continuation = {
        "id": ids["chat"],
        "messages": [
            user_message("hi"),
            {
                "id": ids["message"],
                "role": "assistant",
                "parts": [
                    {"type": "step-start"},
                    {
                        "type": "tool-write_file",
                        "toolCallId": "call-write",
                        "state": "approval-responded",
                        "input": {"path": "notes/hello.md", "content": "x"},
                        "approval": {"id": ids["approval"], "approved": True},
                    },
                ],
            },
        ],
        "trigger": "submit-message",
        "messageId": ids["message"],
    }
    return [
        ("GET", f"/api/conversations/{ids['chat']}", {}),
        ("DELETE", f"/api/conversations/{ids['chat']}", {}),
        ("GET", f"/api/chat/{ids['chat']}/stream", {}),
        ("GET", f"/api/chat/{ids['chat']}/stream", {"headers": {"last-event-id": "1"}}),
        ("POST", "/api/chat", {"json": continuation}),
        ("POST", f"/api/approvals/{ids['approval']}", {"json": {"approved": False}}),
        ("GET", f"/api/runs/{ids['run']}/steps", {}),
        ("POST", f"/api/runs/{ids['run']}/abort", {}),
        ("GET", f"/api/artifacts/{ids['artifact']}", {"follow_redirects": False}),
    ]


def test_user_b_gets_for_a_s_ids_exactly_what_unknown_ids_get(server: Running, a_ids: dict[str, str]) -> None:
    unknown = {key: f"missing-{key}" for key in a_ids}
    with server.client("user-b") as b:
        for (method, path, options), (_, unknown_path, unknown_options) in zip(
            requests(a_ids), requests(unknown), strict=True
        ):
            theirs = b.request(method, path, **options)
            missing = b.request(method, unknown_path, **unknown_options)
            assert theirs.status_code == missing.status_code, (method, path, theirs.text)
            assert theirs.status_code in (404, 204), (method, path, theirs.status_code)
            expected = missing.text
            for key, value in unknown.items():
                expected = expected.replace(value, a_ids[key])
            assert theirs.text == expected, (method, path)
            assert SECRET not in theirs.text
            sent = path + json.dumps(options.get("json"))
            for value in a_ids.values():
                assert value not in theirs.text or value in sent, (method, path, value)
        listed = b.get("/api/conversations").json()
    assert listed == {"conversations": [], "nextCursor": None}


def test_a_s_things_are_untouched_by_b(server: Running, a_ids: dict[str, str]) -> None:
    with server.client("user-b") as b:
        for method, path, options in requests(a_ids):
            b.request(method, path, **options)
        # B may use the same chat id: it is B's own conversation, with nothing of A's
        mine = send(b, a_ids["chat"], "my own question")
        b_chat = stored(b, a_ids["chat"])
    assert SECRET not in mine.text and SECRET not in str(b_chat)
    assert [m["role"] for m in b_chat["messages"]] == ["user", "assistant"]
    with server.client("user-a") as a:
        a_chat = stored(a, a_ids["chat"])
        artifact = a.get(f"/api/artifacts/{a_ids['artifact']}", follow_redirects=False)
    assert a_chat["status"] == "waiting_approval" and a_chat["activeRunId"] == a_ids["run"]
    assert SECRET in str(a_chat["messages"][0])
    assert artifact.status_code == 307
    download = httpx.get(server.url + artifact.headers["location"])
    assert download.status_code == 200 and SECRET in download.text
    assert "hello.md" in download.headers["content-disposition"]
    forged = httpx.get(server.url + artifact.headers["location"][:-3] + "abc")
    assert forged.status_code == 404


@pytest.mark.parametrize("headers", [{}, {"authorization": "Bearer nope"}, {"authorization": "Basic token-a"}])
def test_a_request_without_a_known_token_is_401(server: Running, headers: dict[str, str]) -> None:
    with httpx.Client(base_url=server.url, headers=headers) as anonymous:
        for path in ("/api/conversations", "/api/chat/x/stream"):
            response = anonymous.get(path)
            assert response.status_code == 401, path
            assert response.headers["www-authenticate"] == "Bearer"
        assert anonymous.get("/api/health").status_code == 200


def test_approval_decided_by_its_owner_after_b_tried(server: Running, a_ids: dict[str, str]) -> None:
    with server.client("user-a") as a:
        decided = a.post(f"/api/approvals/{a_ids['approval']}", json={"approved": False, "reason": "no"})
        deadline = time.monotonic() + 20
        while stored(a, a_ids["chat"])["status"] != "idle":
            assert time.monotonic() < deadline
            time.sleep(0.05)
    assert decided.status_code == 200 and decided.json()["decision"] == "denied"

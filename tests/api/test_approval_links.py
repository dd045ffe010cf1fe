"""Signed approval links: an external system decides an approval without the user's token.

Over the real local backend (the dev server on moto); the links are minted by the server's own key,
as the worker mints them for the `Approval Requested` event.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stepline.llm.registry import DEMO_BOOK
from stepline.local.dev_events import DevNotifier
from stepline.runtime.approval_links import ApprovalLinks, link_path
from stepline.store.records import ApprovalRecord
from tests.api.test_chat_api import approval_request, send, wait_status
from tests.support.server import Running, config, running

USER = "alice"


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    settings = config(f"scripted:{DEMO_BOOK}", tokens={"tok-a": USER}, STEPLINE_APPROVAL_TIMEOUT_SECONDS="3600")
    with running(settings) as live:
        yield live


def _links(server: Running) -> ApprovalLinks:
    links = server.server.backend.services.approval_links
    assert links is not None
    return links


def _requested(server: Running, client: httpx.Client, chat_id: str) -> ApprovalRecord:
    request = approval_request(send(client, chat_id, "write a note"))
    wait_status(client, chat_id, "waiting_approval")
    return server.server.backend.services.store.get_approval(USER, request["approvalId"])


def _decide(server: Running, approval_id: str, token: str, approved: bool = True, **extra: Any) -> httpx.Response:
    with server.client() as anonymous:  # no Authorization header: the token is the permission
        return anonymous.post(link_path(approval_id), json={"token": token, "approved": approved, **extra})


def test_a_link_decides_once_without_a_user_token_and_records_who(server: Running) -> None:
    with server.client(USER) as client:
        approval = _requested(server, client, "link-ok")
        token = _links(server).token_for(approval)
        without_user = client.post(f"/api/approvals/{approval.approval_id}", headers={"authorization": ""}, json={})
        first = _decide(server, approval.approval_id, token)
        again = _decide(server, approval.approval_id, token)
        other = _decide(server, approval.approval_id, token, approved=False, reason="no")
        user_route = client.post(f"/api/approvals/{approval.approval_id}", json={"approved": True})
        conversation = wait_status(client, "link-ok", "idle")
    assert without_user.status_code == 401  # the user-token route still needs its user
    assert first.status_code == 200, first.text
    assert first.json()["status"] == "approved" and first.json()["decidedBy"] == "link"
    assert again.status_code == 200 and again.content == first.content
    assert other.status_code == 409
    assert user_route.status_code == 200 and user_route.content == first.content  # one decision, either route
    stored = server.server.backend.services.store.get_approval(USER, approval.approval_id)
    assert (stored.status, stored.decided_by) == ("approved", "link")
    tool = next(p for p in conversation["messages"][-1]["parts"] if p.get("toolCallId") == approval.tool_call_id)
    assert tool["state"] == "output-available"


def test_the_user_route_records_the_user_as_the_decider(server: Running) -> None:
    with server.client(USER) as client:
        approval = _requested(server, client, "link-user")
        decided = client.post(f"/api/approvals/{approval.approval_id}", json={"approved": False})
        late_link = _decide(server, approval.approval_id, _links(server).token_for(approval), approved=True)
        wait_status(client, "link-user", "idle")
    assert decided.status_code == 200 and decided.json()["decidedBy"] == USER
    assert late_link.status_code == 409  # decided already, the other way


def test_an_expired_link_is_410_and_decides_nothing(server: Running) -> None:
    with server.client(USER) as client:
        approval = _requested(server, client, "link-expired")
        now = server.server.backend.services.clock()
        expired = _links(server).token_for(approval.model_copy(update={"expires_at": now - 1}))
        answer = _decide(server, approval.approval_id, expired)
        still = server.server.backend.services.store.get_approval(USER, approval.approval_id)
        client.post(f"/api/approvals/{approval.approval_id}", json={"approved": False})
        wait_status(client, "link-expired", "idle")
    assert answer.status_code == 410
    assert still.status == "requested"


def test_a_link_for_other_input_or_edited_is_404(server: Running) -> None:
    with server.client(USER) as client:
        approval = _requested(server, client, "link-tampered")
        links = _links(server)
        other_input = links.token_for(approval.model_copy(update={"input": {"path": "/etc/passwd", "content": "x"}}))
        version, payload, mac = links.token_for(approval).split(".")
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        later = base64.urlsafe_b64encode(json.dumps({**claims, "e": claims["e"] + 10**9}).encode()).rstrip(b"=")
        longer = f"{version}.{later.decode()}.{mac}"
        forged = ApprovalLinks(b"k" * 32).token_for(approval)
        answers = [_decide(server, approval.approval_id, t) for t in (other_input, longer, forged)]
        malformed = _decide(server, approval.approval_id, "not-a-token")
        still = server.server.backend.services.store.get_approval(USER, approval.approval_id)
        client.post(f"/api/approvals/{approval.approval_id}", json={"approved": False})
        wait_status(client, "link-tampered", "idle")
    assert [a.status_code for a in answers] == [404, 404, 404]
    assert all(a.json() == {"error": {"status": 404, "message": "not found"}} for a in answers)
    assert malformed.status_code == 400 and "token" in malformed.json()["error"]["message"]
    assert still.status == "requested"


def test_a_link_for_another_approval_is_404(server: Running) -> None:
    with server.client(USER) as client:
        first = _requested(server, client, "link-wrong-a")
        second = _requested(server, client, "link-wrong-b")
        answer = _decide(server, second.approval_id, _links(server).token_for(first))
        unknown = _decide(server, "aitxt-unknown", _links(server).token_for(first))
        both = [server.server.backend.services.store.get_approval(USER, a.approval_id) for a in (first, second)]
        for approval, chat in ((first, "link-wrong-a"), (second, "link-wrong-b")):
            client.post(f"/api/approvals/{approval.approval_id}", json={"approved": False})
            wait_status(client, chat, "idle")
    assert answer.status_code == 404 and unknown.status_code == 404
    assert [a.status for a in both] == ["requested", "requested"]


def test_neither_the_link_nor_its_answer_shows_the_tool_input(server: Running) -> None:
    with server.client(USER) as client:
        approval = _requested(server, client, "link-private")
        token = _links(server).token_for(approval)
        answer = _decide(server, approval.approval_id, token)
        wait_status(client, "link-private", "idle")
    assert approval.input  # the demo's note: a path and its content
    payload = base64.urlsafe_b64decode(token.split(".")[1] + "==").decode()
    assert set(json.loads(payload)) == {"u", "a", "e"}
    view = answer.json()
    assert "input" not in view and set(view) == {
        "approvalId",
        "runId",
        "toolCallId",
        "toolName",
        "status",
        "decision",
        "reason",
        "requestedAt",
        "expiresAt",
        "decidedBy",
        "expiredReason",
        "budgetLimit",
    }
    for value in json.loads(json.dumps(approval.input)).values():
        assert str(value) not in token and str(value) not in answer.text


def test_the_approval_requested_event_carries_the_link(server: Running) -> None:
    notifier = server.server.backend.services.notifier
    assert isinstance(notifier, DevNotifier)
    with server.client(USER) as client:
        approval = _requested(server, client, "link-event")
        (event,) = [e for e in notifier.events if e.detail.get("approvalId") == approval.approval_id]
        decision = event.detail["decision"]
        assert isinstance(decision, dict) and decision["path"] == link_path(approval.approval_id)
        answer = _decide(server, approval.approval_id, str(decision["token"]))
        wait_status(client, "link-event", "idle")
    assert event.detail_type == "Approval Requested" and answer.status_code == 200

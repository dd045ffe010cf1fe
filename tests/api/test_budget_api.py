"""A budget request over HTTP on a running `stepline dev` server: paused, 403, approved by an admin, denied.

GIVEN a deployment whose users have a tiny daily token budget and whose admin claim makes the user
`ops` an admin, WHEN a user's chat reaches the budget, THEN the run waits with a `data-budget` part
in the message and the model is not called; the user's own approval is a 403 that decides nothing;
`ops` approving with the user's id resumes the run (the same assistant message goes on to the
answer); a denial ends the run `failed` with the request's sentence; a stop, or a new message,
while the request waits closes the card with the reason (stored and streamed) and no decision can
follow. Over moto's DynamoDB (the
local engine), over a data folder (SQLite), and through the state machine on moto's Step Functions
(the wait is AwaitInput's task token).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from stepline.store.ports import FinishRun
from stepline.store.records import RunRecord
from tests.api.test_chat_api import send, stored, user_message, wait_status
from tests.support.server import Running, config, running, write_book
from tests.unit.loop.support import finish, text

TOKENS = {"token-a": "user-a", "token-b": "user-b", "token-ops": "ops"}


@pytest.fixture(params=["moto", "data-folder", "asl-on-moto"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Running]:
    model = write_book(tmp_path / "budget-book.json", [], fallback=[[*text("t", "Hello."), finish()]])
    cfg = config(
        model,
        tokens=TOKENS,
        STEPLINE_LIMITS=json.dumps({"user_day_tokens": 50}),  # below any call's worst case
        STEPLINE_ADMIN_CLAIM="sub=ops",
        STEPLINE_APPROVAL_TIMEOUT_SECONDS="3600",
    )
    data_dir = tmp_path / "data" if request.param == "data-folder" else None
    engine = "moto" if request.param == "asl-on-moto" else "local"
    with running(cfg, data_dir=data_dir, engine=engine) as live:
        yield live


def _budget_card(conversation: dict[str, Any]) -> dict[str, Any]:
    [card] = [p for p in conversation["messages"][-1]["parts"] if p.get("type") == "data-budget"]
    return card


def _paused(client: httpx.Client, chat_id: str) -> str:
    assert send(client, chat_id, "hello").status_code == 200
    card = _budget_card(wait_status(client, chat_id, "waiting_approval"))
    assert card["data"]["state"] == "requested" and card["data"]["limit"] == "user_day_tokens"
    assert "more than your daily budget" in card["data"]["message"]
    return str(card["data"]["approvalId"])


def test_only_an_admin_raises_a_users_budget(server: Running) -> None:
    with server.client("user-a") as a, server.client("user-b") as b, server.client("ops") as ops:
        approval_id = _paused(a, "budget-chat")
        refused = a.post(f"/api/approvals/{approval_id}", json={"approved": True})
        assert refused.status_code == 403, refused.text
        assert "needs an admin" in refused.json()["error"]["message"]
        assert stored(a, "budget-chat")["status"] == "waiting_approval"  # nothing was decided
        assert _budget_card(stored(a, "budget-chat"))["data"]["state"] == "requested"
        # Another user naming user-a, and the admin without naming the user: not theirs to see.
        assert b.post(f"/api/approvals/{approval_id}", json={"approved": True, "userId": "user-a"}).status_code == 404
        assert ops.post(f"/api/approvals/{approval_id}", json={"approved": True}).status_code == 404
        approved = ops.post(f"/api/approvals/{approval_id}", json={"approved": True, "userId": "user-a"})
        assert approved.status_code == 200, approved.text
        assert approved.json()["decidedBy"] == "ops" and approved.json()["budgetLimit"] == "user_day_tokens"
        done = wait_status(a, "budget-chat", "idle")
    message = done["messages"][-1]
    assert [p["text"] for p in message["parts"] if p.get("type") == "text"] == ["Hello."]
    assert _budget_card(done)["data"]["state"] == "approved"


def test_a_denied_budget_request_ends_the_run_with_its_sentence(server: Running) -> None:
    with server.client("user-a") as a, server.client("ops") as ops:
        approval_id = _paused(a, "denied-chat")
        denied = ops.post(
            f"/api/approvals/{approval_id}", json={"approved": False, "reason": "over plan", "userId": "user-a"}
        )
        assert denied.status_code == 200, denied.text
        conversation = wait_status(a, "denied-chat", "failed")
    card = _budget_card(conversation)
    assert card["data"]["state"] == "denied" and card["data"]["reason"] == "over plan"


def _closed_card(server: Running, chat_id: str, approval_id: str, reason: str, kind: str) -> dict[str, Any]:
    """The ended run's card, closed with `reason`, the same in the stored message and in its log
    (what every stream of the run, and a resume, sends), and the approval expired with the run."""
    store = server.server.backend.services.store
    with server.client("user-a") as client:
        conversation = stored(client, chat_id)
    message = next(m for m in conversation["messages"] if m["role"] == "assistant")
    [card] = [p for p in message["parts"] if p.get("type") == "data-budget"]
    assert card["data"]["state"] == "closed" and card["data"]["reason"] == reason, card
    assert card["data"]["approvalId"] == approval_id and card["data"]["limit"] == "user_day_tokens"
    assert message["metadata"]["closedByEnd"] == {"reason": kind, "toolCallIds": [], "dataPartIds": [approval_id]}
    events = store.events_after("user-a", message["metadata"]["runId"], 0, now=int(time.time() * 1000))
    cards = [cast(dict[str, Any], c["data"]) for e in events for c in e.chunks if c["type"] == "data-budget"]
    assert [c["state"] for c in cards] == ["requested", "closed"] and cards[-1] == card["data"]
    approval = store.get_approval("user-a", approval_id)
    assert approval.status == "expired" and approval.decision is None
    return message


def test_a_stop_while_a_budget_request_waits_closes_its_card_and_no_decision_follows(server: Running) -> None:
    with server.client("user-a") as a, server.client("ops") as ops:
        approval_id = _paused(a, "stopped-budget")
        run_id = stored(a, "stopped-budget")["activeRunId"]
        stopped = a.post(f"/api/runs/{run_id}/abort")
        assert stopped.status_code == 200 and stopped.json()["status"] == "aborted", stopped.text
        wait_status(a, "stopped-budget", "idle")
        message = _closed_card(server, "stopped-budget", approval_id, "stopped before a decision", "stopped")
        before = stored(a, "stopped-budget")
        late = ops.post(f"/api/approvals/{approval_id}", json={"approved": True, "userId": "user-a"})
        denied = ops.post(f"/api/approvals/{approval_id}", json={"approved": False, "userId": "user-a"})
        after = stored(a, "stopped-budget")
    assert late.status_code == 410 and "expired" in late.json()["error"]["message"], late.text
    assert denied.status_code == 410, "closed once: neither decision can follow"
    assert after == before, "nothing changed: the card, the message and the run stay as the end left them"
    assert message["status"] == "aborted" and message["metadata"]["abort"]["reason"] == "user_cancelled"
    assert not [p for p in message["parts"] if p.get("type") == "text"], "no model call was made"


def test_a_new_message_while_a_budget_request_waits_closes_the_old_card(server: Running) -> None:
    with server.client("user-a") as a, server.client("ops") as ops:
        approval_id = _paused(a, "moved-budget")
        body = {"id": "moved-budget", "messages": [user_message("something else", "u2")], "trigger": "submit-message"}
        assert a.post("/api/chat", json=body).status_code == 200
        conversation = wait_status(a, "moved-budget", "waiting_approval")  # the new turn meets the budget too
        why = "interrupted by a new message before a decision"
        old = _closed_card(server, "moved-budget", approval_id, why, "new_user_message")
        refused = ops.post(f"/api/approvals/{approval_id}", json={"approved": True, "userId": "user-a"})
    assert old["metadata"]["abort"]["reason"] == "new_user_message"
    new_card = _budget_card(conversation)
    assert new_card["data"]["state"] == "requested" and new_card["data"]["approvalId"] != approval_id
    assert refused.status_code == 410, refused.text


def test_a_budget_decision_made_while_the_stop_ends_the_run_keeps_it(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The decision commits between the end's reads and its write: the write is refused (the request
    is in the end's compare-and-set list), the end is built again with the decision, and the approval
    never expires."""
    store = server.server.backend.services.store
    finish = store.finish_run
    attempts: list[tuple[str, ...]] = []

    def decided_first(user_id: str, run_id: str, end: FinishRun) -> RunRecord:
        if not attempts:
            store.decide_approval(user_id, end.expire_approvals[0], approved=True, reason=None, now=_now())
        attempts.append(end.expire_approvals)
        return finish(user_id, run_id, end)

    with server.client("user-a") as a:
        approval_id = _paused(a, "raced-budget")
        run_id = stored(a, "raced-budget")["activeRunId"]
        monkeypatch.setattr(store, "finish_run", decided_first)
        stopped = a.post(f"/api/runs/{run_id}/abort")
        monkeypatch.undo()
        message = wait_status(a, "raced-budget", "idle")["messages"][-1]
    assert stopped.status_code == 200 and stopped.json()["status"] == "aborted", stopped.text
    assert attempts == [(approval_id,), ()], "refused once, then built again with the decision"
    [card] = [p for p in message["parts"] if p.get("type") == "data-budget"]
    assert card["data"]["state"] == "approved", "the decision stands: not closed over it"
    assert message["metadata"]["closedByEnd"] == {"reason": "stopped", "toolCallIds": [], "dataPartIds": []}
    approval = store.get_approval("user-a", approval_id)
    assert approval.status in ("processing", "approved") and approval.decision == "approved", "never expired"


def _now() -> int:
    return int(time.time() * 1000)

"""A budget request over HTTP on a running `stepline dev` server: paused, 403, approved by an admin, denied.

GIVEN a deployment whose users have a tiny daily token budget and whose admin claim makes the user
`ops` an admin, WHEN a user's chat reaches the budget, THEN the run waits with a `data-budget` part
in the message and the model is not called; the user's own approval is a 403 that decides nothing;
`ops` approving with the user's id resumes the run (the same assistant message goes on to the
answer); a denial ends the run `failed` with the request's sentence. Over moto's DynamoDB (the
local engine), over a data folder (SQLite), and through the state machine on moto's Step Functions
(the wait is AwaitInput's task token).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.test_chat_api import send, stored, wait_status
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

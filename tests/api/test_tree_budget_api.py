"""A sub-agent's spending counts against its lead's run budget, over HTTP on a running `stepline dev` server.

GIVEN a lead with `run_tokens` whose researcher would spend past it, WHEN a user's chat delegates,
THEN the researcher pauses before the call that would pass the lead's limit, the conversation
reads `waiting_approval` with the request as a budget card in its own message (naming the
researcher); another user cannot decide it (404); its owner raises it through the approval webhook
and both runs go on to the lead's answer, the card settled `approved`; denied, the researcher ends
and the lead answers with its error read; the lead stopped while the request waits, the card is
closed in both messages and no decision can follow. Over moto's DynamoDB (the local engine) and
over a data folder (SQLite).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from stepline.protocol.sse import decode_ui_message_stream
from stepline.runtime.child_results import child_run_id
from stepline.store.usage_counters import CounterKey
from tests.api.test_chat_api import send, wait_status
from tests.support.server import Running, config, running
from tests.support.tree_agents import LIMIT

TOKENS = {"token-a": "user-a", "token-b": "user-b"}


@pytest.fixture(params=["moto", "data-folder"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Running]:
    cfg = config(
        None,
        tokens=TOKENS,
        STEPLINE_AGENT="tests.support.tree_agents:AGENTS",
        STEPLINE_APPROVAL_TIMEOUT_SECONDS="3600",
    )
    data_dir = tmp_path / "data" if request.param == "data-folder" else None
    with running(cfg, data_dir=data_dir) as live:
        yield live


def _cards(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in conversation["messages"][-1]["parts"] if p.get("type") == "data-budget"]


def _paused(client: httpx.Client, chat_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The conversation waiting for the researcher's budget request, and its card as the chat's stream gave it."""
    response = send(client, chat_id, "research beavers for me")
    assert response.status_code == 200
    conversation = wait_status(client, chat_id, "waiting_approval", timeout=30)  # the researcher waits
    chunks = [c.to_wire() for c in decode_ui_message_stream(response.text)]
    [card] = [c for c in chunks if c["type"] == "data-budget"]  # the stream ends once the researcher waits
    return conversation, card


def test_the_owner_raises_the_trees_budget_and_both_runs_go_on(server: Running) -> None:
    with server.client("user-a") as a, server.client("user-b") as b:
        waiting, card = _paused(a, "tree-chat")
        run_id = str(waiting["activeRunId"])
        child = child_run_id(run_id, "r1")
        approval_id = str(card["data"]["approvalId"])
        foreign = b.post(f"/api/approvals/{approval_id}", json={"approved": True})
        approved = a.post(f"/api/approvals/{approval_id}", json={"approved": True})
        done = wait_status(a, "tree-chat", "idle", timeout=30)
    assert card["data"]["state"] == "requested" and card["data"]["limit"] == "run_tokens"
    assert card["data"]["subAgent"]["runId"] == child and card["data"]["subAgent"]["agent"] == "researcher"
    assert card["data"]["value"] == LIMIT and "which its sub-agents share" in card["data"]["message"]
    assert foreign.status_code == 404
    assert approved.status_code == 200, approved.text
    assert approved.json()["runId"] == child and approved.json()["budgetLimit"] == "run_tokens"
    parts = done["messages"][-1]["parts"]
    [tool] = [p for p in parts if p["type"] == "tool-researcher"]
    assert tool["state"] == "output-available" and tool["output"] == "Beavers build dams."
    assert [p["text"] for p in parts if p["type"] == "text"] == ["Here is what I found."]
    assert [c["data"]["state"] for c in _cards(done)] == ["approved"]  # one decision: the lead took the raise
    counters = server.server.backend.services.store.counters
    tree = counters.read(CounterKey("user", "user-a", f"run:{_day(done)}:{run_id}"))
    assert tree.calls == 6 and tree.tokens == 2 * 20 + 4 * 2100 and tree.committed_tokens == tree.tokens


def _day(conversation: dict[str, Any]) -> str:
    return f"{datetime.fromtimestamp(conversation['createdAt'] / 1000, tz=UTC):%Y-%m-%d}"


def test_denied_the_researcher_ends_and_the_lead_answers_with_its_error(server: Running) -> None:
    with server.client("user-a") as a:
        _, card = _paused(a, "denied-tree")
        denied = a.post(f"/api/approvals/{card['data']['approvalId']}", json={"approved": False, "reason": "enough"})
        done = wait_status(a, "denied-tree", "idle", timeout=30)
    assert denied.status_code == 200, denied.text
    parts = done["messages"][-1]["parts"]
    [tool] = [p for p in parts if p["type"] == "tool-researcher"]
    assert tool["state"] == "output-error" and "the budget request was denied (enough)" in tool["errorText"]
    assert [p["text"] for p in parts if p["type"] == "text"] == ["Here is what I found."]
    [settled] = _cards(done)
    assert settled["data"]["state"] == "denied" and settled["data"]["reason"] == "enough"


def test_stopping_the_lead_while_the_researchers_request_waits_closes_the_card_in_both_messages(
    server: Running,
) -> None:
    store = server.server.backend.services.store
    with server.client("user-a") as a:
        waiting, card = _paused(a, "stopped-tree")
        run_id = str(waiting["activeRunId"])
        approval_id = str(card["data"]["approvalId"])
        stopped = a.post(f"/api/runs/{run_id}/abort")
        done = wait_status(a, "stopped-tree", "idle", timeout=30)
        late = a.post(f"/api/approvals/{approval_id}", json={"approved": True})
        child = store.get_run("user-a", child_run_id(run_id, "r1"))
        deadline = time.monotonic() + 30
        while child.status not in ("aborted", "failed", "completed"):  # the lead's end stops its child next
            assert time.monotonic() < deadline, f"the researcher stayed {child.status}"
            time.sleep(0.05)
            child = store.get_run("user-a", child.run_id)
    assert stopped.status_code == 200 and stopped.json()["status"] == "aborted", stopped.text
    message = done["messages"][-1]
    [closed] = _cards(done)
    assert closed["data"]["state"] == "closed" and closed["data"]["reason"] == "stopped before a decision"
    assert closed["data"]["subAgent"]["runId"] == child.run_id, "still names the sub-agent that asked"
    mark = message["metadata"]["closedByEnd"]
    assert mark["reason"] == "stopped" and mark["dataPartIds"] == [approval_id]
    assert late.status_code == 410, late.text
    assert child.status == "aborted" and child.cancel_reason == "parent_ended"
    own = store.get_message("user-a", child.conversation_id, child.assistant_message_id)
    [own_card] = [p for p in own.parts if p.get("type") == "data-budget"]
    own_data = cast(dict[str, Any], own_card["data"])
    assert (
        own_data["state"] == "closed" and own_data["reason"] == "stopped because its parent run ended before a decision"
    )
    approval = store.get_approval("user-a", approval_id)
    assert approval.status == "expired" and approval.expired_reason == "user_cancelled" and approval.decision is None

"""How each shape of bench/cost.py drives its run: the shapes, and their client over HTTP."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from bench.cost_meter import DynamoMeter
from bench.cost_run import Observed
from stepline.protocol.chunks import parse_chunk
from stepline.protocol.reducer import reduce_ui_message_stream
from stepline.runtime.services import Services

WAIT_SECONDS = 600.0
"""The approval's wait: sampled for a few seconds and scaled to this."""


@dataclass(frozen=True)
class Shape:
    name: str
    steps: int
    watched: bool
    approval: bool
    left: bool = False
    """The page is closed at the approval: the decision comes from POST /api/approvals, and nobody
    streams the rest of the run."""


SHAPES = {
    "watched10": Shape("watched10", 10, watched=True, approval=True),
    "headless10": Shape("headless10", 10, watched=False, approval=True),
    "reply1": Shape("reply1", 1, watched=True, approval=False),
    "left10": Shape("left10", 10, watched=True, approval=True, left=True),
}


def sse_chunks(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ") and line != "data: [DONE]"]


# Ids the size a deployment's are (an item's write units are by its bytes, and the run and
# conversation items sit near 1 KB): a Cognito user's `sub` is a UUID, and the AI SDK's ids
# (`generateId`) are 16 characters.
USER_ID = "3f2b9c1e-8a4d-4e6b-9f0a-2c7d5e1b8a63"
CHAT_ID = "Ojy2jX6pY3Hq0y8m"
MESSAGE_ID = "k3Jq9vX2mP7wLz4T"


def continuation(chat_id: str, user: dict[str, Any], chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The stock client's POST after the user approved: the assistant message with the approval answered."""
    message = reduce_ui_message_stream([parse_chunk(c) for c in chunks]).message
    assert message is not None
    for part in message["parts"]:
        if part.get("state") == "approval-requested":
            part["state"] = "approval-responded"
            part["approval"] = {**part["approval"], "approved": True}
    return {"id": chat_id, "messages": [user, message], "trigger": "submit-message", "messageId": message["id"]}


def drive(
    shape: Shape, client: httpx.Client, services: Services, observed: Observed, meter: DynamoMeter, sample: float
) -> str:
    """Run the shape's client; returns the run id."""
    user = {"id": MESSAGE_ID, "role": "user", "parts": [{"type": "text", "text": "Make a plan and check it."}]}
    if shape.watched:
        first = observed.request(
            client,
            "StreamFunction",
            "POST",
            "/api/chat",
            json={"id": CHAT_ID, "messages": [user], "trigger": "submit-message"},
        )
        chunks = sse_chunks(first.text)
        run_id = str(chunks[0]["messageMetadata"]["runId"])
        if shape.approval:  # parked: the approval holds its task token (AwaitInput has run)
            approval_id = _pending_approval(lambda: services.store.pending_approvals(USER_ID), run_id)
            observed.sample_wait(meter, sample, WAIT_SECONDS)
            if shape.left:  # decided elsewhere, ten minutes on: the stream's last note has long expired
                waited, clock = int(WAIT_SECONDS * 1000), services.clock
                services.clock = lambda: clock() + waited
                path = f"/api/approvals/{approval_id}"
                observed.request(client, "ApiFunction", "POST", path, json={"approved": True})
                _until(lambda: services.store.get_run(USER_ID, run_id).status == "completed")
                return run_id
            body = continuation(CHAT_ID, user, chunks)
            observed.request(client, "StreamFunction", "POST", "/api/chat", json=body)
        return run_id
    started = observed.request(client, "ApiFunction", "POST", "/api/runs", json={"input": user}).json()
    run_id = str(started["runId"])
    store = services.store
    approval_id = _pending_approval(lambda: store.pending_approvals(USER_ID), run_id)
    observed.sample_wait(meter, sample, WAIT_SECONDS)
    observed.request(client, "ApiFunction", "POST", f"/api/approvals/{approval_id}", json={"approved": True})
    _until(lambda: store.get_run(USER_ID, run_id).status == "completed")
    observed.request(client, "ApiFunction", "GET", f"/api/runs/{run_id}")
    return run_id


def _until(done: Callable[[], bool], timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError("the run did not get there")
        time.sleep(0.05)


def _pending_approval(pending: Callable[[], list[Any]], run_id: str) -> str:
    found: list[str] = []

    def ready() -> bool:
        found[:] = [a.approval_id for a in pending() if a.run_id == run_id and a.task_token]
        return bool(found)

    _until(ready)
    return found[0]

"""A sub-agent's approval requests, raised into the conversation's own message, and settled there.

A child run's approval lives in the child's message, which reaches the parent's message only as
the agent-tool part's preliminary output; the AI SDK's `addToolApprovalResponse` looks for the
request among the message's own parts. So, when a child (at any depth) starts to wait for an
approval, the conversation's run (the root of its chain of parents) gets a part of its own for it
in its log: a dynamic tool part, `toolCallId` `sub-approval-{approvalId}`, named as the child's tool
with its input, in state `approval-requested` (`tool-input-available` + `tool-approval-request`).
Its `callProviderMetadata.stepline.subAgent` names the run, the tool call and the agents on the way.

These parts sit in a step of their own after the parent's step that called the sub-agents (one
`start-step` per wait, before the first of them), so the SDK's
`lastAssistantMessageIsCompleteWithApprovalResponses` sends the message once every request of that
step is answered, and the continuation (`POST /api/chat`) decides each through `waits.decide`, the
webhook's compare-and-set. Whichever path decides (the webhook, a signed link, the continuation, an
expiry), the decision settles the raised part: `tool-approval-response`, then `tool-output-available`
(`{"approved": true}`) or `tool-output-denied`, so no later stream finds it still asking and no
client sends it twice. What the approved tool does is shown where it runs, inside the child's message.

A child's budget request (a limit held its next call back, `stepline.runtime.budget_wait`) is raised
as the same `data-budget` part the child's own message has (same id, its `data` with `subAgent`
naming where it came from), so the conversation shows the budget card, whose decision goes to the
approval webhook; settled, the part is written again with its decision's state (`approved`,
`denied`; an expired request reads denied), which replaces it.

A raised part is none of the parent model's business: the history leaves it out
(`stepline.protocol.raised`; a data part never reaches a model).
Every write is idempotent (the log is read first), as its callers may run twice.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from pydantic import JsonValue

from ..loop.budget_request import BUDGET_PART, budget_data
from ..loop.state import PendingBudget
from ..protocol.raised import RAISED_PREFIX, raised_call_id
from ..store.errors import ConcurrentUpdate, NotFound, TerminalState
from ..store.event_batcher import event_type_of
from ..store.records import ApprovalRecord, EventRecord, NewEvent, RunRecord
from .services import Services
from .stream_push import notify

__all__ = ["raise_requests", "settle_raised"]

_LOG = logging.getLogger("stepline.runtime")
_MAX_LEVELS = 16
_APPEND_ATTEMPTS = 10


def _parent_id(run: RunRecord) -> str | None:
    parent = (run.context or {}).get("parent")
    return str(cast(dict[str, Any], parent)["runId"]) if isinstance(parent, dict) else None


def _root(services: Services, run: RunRecord) -> tuple[RunRecord, list[str]] | None:
    """The conversation's run above a child run, and the agents from it down to the child (None: not a child)."""
    if _parent_id(run) is None:
        return None
    path = [run.agent or "sub-agent"]
    current = run
    for _ in range(_MAX_LEVELS):
        parent_id = _parent_id(current)
        if parent_id is None:
            return current, list(reversed(path[:-1]))
        current = services.store.get_run(run.user_id, parent_id)
        path.append(current.agent or "agent")
    return None


def _origin(run: RunRecord, approval: ApprovalRecord, path: list[str]) -> dict[str, JsonValue]:
    return {
        "runId": run.run_id,
        "toolCallId": approval.tool_call_id,
        "agent": run.agent,
        "agents": cast(list[JsonValue], path),
    }


def _budget_chunk(run: RunRecord, approval: ApprovalRecord, path: list[str]) -> dict[str, JsonValue]:
    """The child's budget request as the conversation's own `data-budget` part, in its current state."""
    asked = cast(dict[str, Any], approval.input if isinstance(approval.input, dict) else {})

    def number(name: str) -> float:
        value = asked.get(name)
        return float(value) if isinstance(value, int | float) else 0.0

    pending = PendingBudget(
        approval_id=approval.approval_id,
        limit=approval.budget_limit or "",
        value=number("value"),
        spent=number("spent"),
        needed=number("needed"),
        message=str(asked.get("message") or approval.reason or ""),
        requested_at=approval.requested_at,
    )
    if approval.status == "requested":
        state, reason = "requested", None
    elif approval.status == "expired":
        state, reason = "denied", approval.expired_reason
    else:
        state, reason = ("approved" if approval.decision == "approved" else "denied"), approval.reason
    data = budget_data(pending, state, reason if state != "requested" else None)
    data["subAgent"] = _origin(run, approval, path)
    return {"type": f"data-{BUDGET_PART}", "id": approval.approval_id, "data": data}


def _request_chunks(run: RunRecord, approval: ApprovalRecord, path: list[str]) -> list[dict[str, JsonValue]]:
    call_id = raised_call_id(approval.approval_id)
    origin = _origin(run, approval, path)
    chunks: list[dict[str, JsonValue]] = [
        {
            "type": "tool-input-available",
            "toolCallId": call_id,
            "toolName": approval.tool_name,
            "input": approval.input,
            "dynamic": True,
            "providerMetadata": {"stepline": {"subAgent": origin}},
        },
        {"type": "tool-approval-request", "approvalId": approval.approval_id, "toolCallId": call_id},
    ]
    if approval.reason is not None:
        chunks[1]["reason"] = approval.reason
    return chunks


def _settle_chunks(approval: ApprovalRecord) -> list[dict[str, JsonValue]]:
    approved = approval.decision == "approved" and approval.status != "expired"
    reason = approval.expired_reason if approval.status == "expired" else approval.reason
    response: dict[str, JsonValue] = {"type": "tool-approval-response", "approvalId": approval.approval_id}
    response["approved"] = approved
    if reason is not None:
        response["reason"] = reason
    call_id = raised_call_id(approval.approval_id)
    if approved:
        return [response, {"type": "tool-output-available", "toolCallId": call_id, "output": {"approved": True}}]
    return [response, {"type": "tool-output-denied", "toolCallId": call_id}]


def _chunks(events: list[EventRecord]) -> list[dict[str, JsonValue]]:
    return [chunk for event in events for chunk in event.chunks]


def _budget_states(chunks: list[dict[str, JsonValue]]) -> dict[str, str]:
    """The raised budget cards in the log: the latest state of each, by approval id."""
    found: dict[str, str] = {}
    for chunk in chunks:
        data = chunk.get("data")
        if chunk.get("type") == f"data-{BUDGET_PART}" and isinstance(data, dict):
            found[str(chunk.get("id"))] = str(cast(dict[str, Any], data).get("state"))
    return found


def _section_open(chunks: list[dict[str, JsonValue]]) -> bool:
    """Whether the log's last step is a step of raised requests (it starts with one)."""
    for index in range(len(chunks) - 1, -1, -1):
        if chunks[index].get("type") == "start-step":
            following = chunks[index + 1] if index + 1 < len(chunks) else {}
            return str(following.get("toolCallId", "")).startswith(RAISED_PREFIX)
    return False


def _write(services: Services, run: RunRecord, approvals: list[ApprovalRecord], *, settle: bool) -> None:
    found = _root(services, run)
    if found is None:
        return
    root, path = found
    for _ in range(_APPEND_ATTEMPTS):
        try:
            chunks = _chunks(services.store.events_after(run.user_id, root.run_id, 0, now=services.clock()))
        except NotFound:
            return
        asked = {str(c.get("approvalId")) for c in chunks if c.get("type") == "tool-approval-request"}
        settled = {str(c.get("approvalId")) for c in chunks if c.get("type") == "tool-approval-response"}
        budgets = _budget_states(chunks)
        new: list[dict[str, JsonValue]] = []
        cards: list[dict[str, JsonValue]] = []
        for approval in approvals:
            if approval.budget_limit is not None:  # a budget request: the budget card's part
                card = _budget_chunk(run, approval, path)
                state, shown = cast(dict[str, Any], card["data"])["state"], budgets.get(approval.approval_id)
                if shown is None or (state != "requested" and shown != state):  # never asked again once decided
                    cards.append(card)
                continue
            if approval.approval_id not in asked:
                new += _request_chunks(run, approval, path)
            if settle and approval.approval_id not in settled:
                new += _settle_chunks(approval)
        if new and new[0]["type"] == "tool-input-available" and not _section_open(chunks):
            new.insert(0, {"type": "start-step"})
        new += cards
        if not new:
            return
        event = NewEvent(type=event_type_of(str(new[-1]["type"])), chunks=new)
        try:
            written = services.store.append_events(run.user_id, root.run_id, [event], now=services.clock())
        except ConcurrentUpdate:  # another writer meanwhile: read the log again
            continue
        except TerminalState:  # the conversation's run has ended: nobody asks any more
            return
        notify(services.stream_push, run.user_id, root.run_id, written[-1].seq)
        return
    _LOG.warning("run %s could not raise its approvals into run %s", run.run_id, root.run_id)


def raise_requests(services: Services, run: RunRecord, approvals: list[ApprovalRecord]) -> None:
    """A child run's approval requests into the conversation's message (a run without a parent: nothing).

    The worker calls it before the requests are stored (nobody can decide one yet, and the
    conversation's stream, which stops once every sub-agent waits for a person, reads it first);
    AwaitInput again, for a crash in between (one decided meanwhile is settled by its decision).
    """
    requested = [a for a in approvals if a.status == "requested"]
    if _parent_id(run) is not None and requested:
        _write(services, run, requested, settle=False)


def settle_raised(services: Services, approval: ApprovalRecord) -> None:
    """A decided (or expired) approval of a child run settles its raised part (raising it first if need be)."""
    if approval.status == "requested":
        return
    try:
        run = services.store.get_run(approval.user_id, approval.run_id)
    except NotFound:
        return
    _write(services, run, [approval], settle=True)

"""What the run inspector reads: each step's request as sent, its answer, timings, tools and approvals.

**Written** by the model step (`step_fields`), from the loop's `StepOutcome.inspection` (with
`Services.inspect`, on by default). A step's request repeats the previous step's messages and
adds the previous answer and its tool results, so storing every request whole would grow a run's
records with the square of its steps: a step stores its messages as
`{"sameAs": n, "count": k, "plus": [...]}` — the first k messages of step n's request, then the
new ones — whenever they begin with step n's (a `prepare_step` that rewrote the history stores
them whole), and its instructions and tool definitions as `{"sameAs": n}` when they are step n's
(they change between steps only through `prepare_step`). Every `KEYFRAME_EVERY`th step stores its
request whole, so writing a step reads only the steps since the last such one (`window_start`), not
the whole run: a run of 500 steps reads at most 8 step records per step. A step record over the
store's offload threshold goes to the blob store like any other record (`store.payloads`), so DynamoDB items stay small.

**Read** by `run_view` for the API (`GET /api/runs/{id}/steps`) and the CLI (`stepline runs
show`): the steps in order with their requests resolved back to the messages as sent, timings in
milliseconds (queued: from when the step became due to its start; time to first token; duration),
each attempt and why it was retried, the tool calls with input, output, duration and who decided
their approval, and the sub-agent tree: an agent-tool call's child run (its status, usage and its
own children, `DEFAULT_MAX_DEPTH` levels down), each openable by its run id, and on a child run the
parent call it answers. Finding a call's child is one read per tool call. Everything was masked
when it was written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any, cast

from pydantic import JsonValue

from ..agent.delegation import DEFAULT_MAX_DEPTH
from ..loop.state import StepOutcome
from ..store.errors import NotFound
from ..store.ports import Store
from ..store.records import ApprovalRecord, RunRecord, StepRecordRow, ToolCallRecord
from .child_results import child_run_id, parent_of

__all__ = ["KEYFRAME_EVERY", "queued_at", "resolve_requests", "run_view", "step_fields", "window_start"]

KEYFRAME_EVERY = 8
"""Each step whose number is a multiple of this stores its request whole."""


def window_start(step_number: int) -> int:
    """The first step whose record writing step `step_number` needs.

    The last whole request at or before the previous step: steps 1..7 need step 0 on, step 9 needs
    8 on; step 8 is whole and needs 0..7 only for `queued_at`'s previous step.
    """
    return max(0, ((step_number - 1) // KEYFRAME_EVERY) * KEYFRAME_EVERY)


def queued_at(run: RunRecord, previous: Sequence[StepRecordRow], approvals: Sequence[ApprovalRecord]) -> int:
    """When the step became due: the previous step's end, or a later decision it waited for."""
    due = previous[-1].ended_at or previous[-1].started_at if previous else run.started_at
    decided = [a.decided_at for a in approvals if a.decided_at is not None]
    return max([due, *decided])


_REPEATED = ("instructions", "tools")
"""Request fields a step stores as `{"sameAs": n}` when they are what step n sent."""


def resolve_requests(rows: Sequence[StepRecordRow]) -> list[dict[str, JsonValue] | None]:
    """Each row's request as sent, references to earlier steps resolved (None: nothing recorded)."""
    resolved: list[dict[str, JsonValue] | None] = []
    by_step: dict[int, dict[str, JsonValue]] = {}
    for row in rows:
        request = _resolved(row, by_step)
        if request is not None:
            by_step[row.step_index] = request
        resolved.append(request)
    return resolved


def _resolved(row: StepRecordRow, by_step: Mapping[int, dict[str, JsonValue]]) -> dict[str, JsonValue] | None:
    if row.request is None:
        return None
    request = dict(row.request)
    messages = request.get("messages")
    if isinstance(messages, dict):
        base = by_step.get(int(cast(int, messages.get("sameAs", -1))), {}).get("messages")
        if not isinstance(base, list):
            return None  # what it refers to was not read (or not recorded): unknown, never a wrong list
        earlier = cast(list[JsonValue], base)
        count = int(cast(int, messages.get("count", 0)))
        request["messages"] = [*earlier[:count], *cast(list[JsonValue], messages.get("plus") or [])]
    for key in _REPEATED:
        value = request.get(key)
        if isinstance(value, dict) and set(value) == {"sameAs"}:
            request[key] = by_step.get(int(cast(int, value["sameAs"])), {}).get(key)
    return request


def _encoded(request: dict[str, JsonValue], previous: Sequence[StepRecordRow]) -> dict[str, JsonValue]:
    """`request` with what the previous step sent too stored as references to it."""
    if not previous:
        return request
    earlier = resolve_requests(previous)[-1]
    if earlier is None:
        return request
    index = previous[-1].step_index
    encoded = dict(request)
    messages, sent = request.get("messages"), earlier.get("messages")
    if isinstance(messages, list) and isinstance(sent, list) and messages[: len(sent)] == sent:
        encoded["messages"] = {"sameAs": index, "count": len(sent), "plus": messages[len(sent) :]}
    for key in _REPEATED:
        if key in request and key in earlier and request[key] == earlier[key]:
            encoded[key] = {"sameAs": index}
    return encoded


def step_fields(
    outcome: StepOutcome, step_number: int, previous: Sequence[StepRecordRow], queued: int
) -> dict[str, Any]:
    """The inspector's fields of a step's record (empty without an inspection: nothing recorded).

    `previous`: the step records from `window_start(step_number)` on, before it.
    """
    inspection = outcome.inspection
    if inspection is None:
        return {}
    request = cast(dict[str, JsonValue] | None, inspection.get("request")) or None
    whole = step_number % KEYFRAME_EVERY == 0
    return {
        "request": _encoded(request, [] if whole else previous) if request is not None else None,
        "response": inspection.get("response"),
        "attempts": inspection.get("attempts") or [],
        "started_at": inspection.get("startedAt"),
        "ended_at": inspection.get("endedAt"),
        "queued_at": queued,
    }


def _ms(later: int | None, earlier: int | None) -> int | None:
    return later - earlier if later is not None and earlier is not None else None


def _step_view(row: StepRecordRow, request: dict[str, JsonValue] | None) -> dict[str, Any]:
    attempts = row.attempts
    last = attempts[-1] if attempts else {}
    first_output = cast(int | None, last.get("firstOutputAt"))
    return {
        "stepNumber": row.step_index,
        "status": row.status,
        "finishReason": row.finish_reason,
        "usage": row.usage,
        "request": request,
        "response": row.response,
        "attempts": attempts,
        "retries": [
            {"attempt": i, "reason": a.get("retryReason"), "error": a.get("error")}
            for i, a in enumerate(attempts)
            if a.get("error") is not None
        ],
        "timings": {
            "queuedAt": row.queued_at,
            "startedAt": row.started_at,
            "endedAt": row.ended_at,
            "queuedMs": _ms(row.started_at, row.queued_at),
            "timeToFirstTokenMs": _ms(first_output, cast(int | None, last.get("startedAt"))),
            "durationMs": _ms(row.ended_at, row.started_at),
        },
        "cost": (row.usage or {}).get("costUsd"),  # None: the model has no price
        "tools": [],
    }


def _tool_view(call: ToolCallRecord, approval: ApprovalRecord | None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "toolCallId": call.tool_call_id,
        "toolName": call.tool_name,
        "status": call.status,
        "input": call.input,
        "output": call.output,
        "error": call.error,
        "startedAt": call.started_at,
        "endedAt": call.ended_at,
        "durationMs": _ms(call.ended_at, call.started_at),
        "approval": None,
        "subAgent": None,
    }
    if approval is not None:
        view["approval"] = {
            "approvalId": approval.approval_id,
            "status": approval.status,
            "decision": approval.decision,
            "decidedBy": approval.decided_by,
            "reason": approval.reason,
            "requestedAt": approval.requested_at,
            "decidedAt": approval.decided_at,
        }
    return view


def _approvals(store: Store, run: RunRecord) -> list[ApprovalRecord]:
    """The run's approvals, found through its message's tool parts (an approval carries its id there)."""
    message = store.get_message(run.user_id, run.conversation_id, run.assistant_message_id)
    found: list[ApprovalRecord] = []
    for part in message.parts:
        approval = part.get("approval")
        if isinstance(approval, dict) and isinstance(approval.get("id"), str):
            with contextlib.suppress(NotFound):
                found.append(store.get_approval(run.user_id, str(approval["id"])))
    return found


def _sub_agent(store: Store, run: RunRecord, call: ToolCallRecord, levels: int) -> dict[str, Any] | None:
    """The child run answering `call` (None: not an agent-tool call, or its child never started)."""
    try:
        child = store.get_run(run.user_id, child_run_id(run.run_id, call.tool_call_id))
    except NotFound:
        return None
    return {
        "toolCallId": call.tool_call_id,
        "toolName": call.tool_name,
        "runId": child.run_id,
        "agent": child.agent,
        "status": child.status,
        "finishReason": child.finish_reason,
        "usage": child.usage,
        "startedAt": child.started_at,
        "endedAt": child.ended_at,
        "subAgents": _sub_agents(store, child, levels - 1) if levels > 1 else [],
    }


def _sub_agents(store: Store, run: RunRecord, levels: int) -> list[dict[str, Any]]:
    calls = sorted(store.list_tool_calls(run.user_id, run.run_id), key=lambda c: c.step_index)
    return [sub for call in calls if (sub := _sub_agent(store, run, call, levels)) is not None]


def run_view(store: Store, user_id: str, run_id: str) -> dict[str, Any]:
    """The whole inspection of one of the user's runs (`NotFound` for anyone else's)."""
    run = store.get_run(user_id, run_id)
    approvals = _approvals(store, run)
    rows = store.list_steps(user_id, run_id)
    steps = [_step_view(row, request) for row, request in zip(rows, resolve_requests(rows), strict=True)]
    by_call = {a.tool_call_id: a for a in approvals}
    by_step = {step["stepNumber"]: step for step in steps}
    sub_agents: list[dict[str, Any]] = []
    for call in sorted(store.list_tool_calls(user_id, run_id), key=lambda c: c.step_index):
        tool = _tool_view(call, by_call.get(call.tool_call_id))
        tool["subAgent"] = _sub_agent(store, run, call, DEFAULT_MAX_DEPTH)
        if tool["subAgent"] is not None:
            sub_agents.append(tool["subAgent"])
        step = by_step.get(call.step_index)
        if step is not None:
            step["tools"].append(tool)
    parent = parent_of(run)
    return {
        "runId": run.run_id,
        "conversationId": run.conversation_id,
        "messageId": run.assistant_message_id,
        "agent": run.agent,
        "provider": run.provider,
        "model": run.model,
        "status": run.status,
        "finishReason": run.finish_reason,
        "usage": run.usage,
        "error": run.error,
        "startedAt": run.started_at,
        "endedAt": run.ended_at,
        "traceId": run.trace.split("-")[1] if run.trace else None,
        "steps": steps,
        "parent": {key: parent.get(key) for key in ("runId", "toolCallId", "toolName", "depth")} if parent else None,
        "subAgents": sub_agents,
    }

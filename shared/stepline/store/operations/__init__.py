"""The store's operations, written once against a unit of work (`unit.Unit`).

Each function reads what it needs, checks every condition, and only then stages its writes; the
backend commits them atomically. Nothing here knows whether it runs in memory or on DynamoDB.

    common      the transition check, the reads that must find their record, shared staging
    runs        a turn's start, its run's life and end
    approvals   requesting, deciding once, settling and expiring approvals
    tool_calls  claiming a tool call once, its start, outcome and a client's answer
"""

from __future__ import annotations

from .approvals import attach_task_token, decide_approval, expire_approval, request_approval, settle_approval
from .common import DELTA_RETENTION_MS, check_move
from .runs import (
    append_events,
    attach_run_token,
    finish_run,
    heartbeat,
    mark_notified,
    mark_running,
    request_abort,
    save_checkpoint,
    save_snapshot,
    save_step,
    start_turn,
)
from .tool_calls import answer_tool_call, claim_tool_call, record_tool_outcome, start_tool_call

__all__ = [
    "DELTA_RETENTION_MS",
    "append_events",
    "attach_task_token",
    "check_move",
    "claim_tool_call",
    "decide_approval",
    "expire_approval",
    "finish_run",
    "heartbeat",
    "mark_notified",
    "mark_running",
    "record_tool_outcome",
    "request_abort",
    "request_approval",
    "save_snapshot",
    "save_step",
    "settle_approval",
    "answer_tool_call",
    "attach_run_token",
    "save_checkpoint",
    "start_tool_call",
    "start_turn",
]

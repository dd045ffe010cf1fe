"""The reconciler: no run is left "working" after its execution died.

A run is closed by its state machine's own FinalizeRun or FailRun. An execution that ends any other
way — stopped from the console, timed out, failed by an error no `Catch` handles (`States.Runtime`,
`States.DataLimitExceeded`, FailRun's own retries exhausted) — or a continue-as-new generation that
never started would leave the run non-terminal, its conversation's `active_run_id` set and every new
message refused with 409. Two triggers close such runs:

- **an execution status change** (EventBridge, `aws.states`, FAILED / TIMED_OUT / ABORTED):
  `close_ended_run` closes the run as failed (with the execution's error and cause) or aborted;
- **a sweep** (scheduled): `sweep` looks up the execution of every run that has not moved for a
  while; one that cannot be found, or has ended without closing its run, is closed the same way.

Both are idempotent and never touch a terminal run (the close goes through the worker's `_end`,
which re-reads the run and stops at a terminal status; the store refuses to move one anyway).
Locally the same functions run against moto's executions.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..protocol._json import loads_strict
from ..store.errors import NotFound
from ..store.records import TERMINAL
from .ending import abort_run, fail_run
from .executions import Executions
from .inbox import start_after
from .services import Services

__all__ = [
    "CLOSING_STATUSES",
    "Reconciled",
    "close_ended_run",
    "handle_event",
    "sweep",
]

_LOG = logging.getLogger("stepline.reconcile")

CLOSING_STATUSES = frozenset({"FAILED", "TIMED_OUT", "ABORTED"})
"""Execution statuses that end a run the state machine did not close itself."""

DEFAULT_GRACE_MS = 5 * 60 * 1000
"""A run is swept only when neither its start nor its heartbeat is this recent: a turn is written
before its execution starts, so a younger run may simply not have one yet."""

Outcome = Literal["closed", "untouched", "running", "unknown"]


@dataclass(frozen=True, slots=True)
class Reconciled:
    """What the reconciler did with one run."""

    user_id: str
    run_id: str
    outcome: Outcome
    status: str | None = None
    """The run's status afterwards."""


def close_ended_run(
    services: Services,
    user_id: str,
    run_id: str,
    *,
    status: str,
    error: str | None = None,
    cause: str | None = None,
) -> Reconciled:
    """Close a run whose execution ended with `status` (FAILED, TIMED_OUT, ABORTED or SUCCEEDED)."""
    try:
        run = services.store.get_run(user_id, run_id)
    except NotFound:
        return Reconciled(user_id, run_id, "unknown")
    if run.status in TERMINAL["run"]:
        return Reconciled(user_id, run_id, "untouched", run.status)
    quiet = dataclasses.replace(services, orchestrator=None)  # the execution has ended: nothing to stop
    if status == "ABORTED":
        result = abort_run(quiet, user_id, run_id, reason="execution_stopped")
    else:
        message, code = _reason(status, error, cause)
        result = fail_run(quiet, user_id, run_id, message, code)
    _LOG.warning("run %s closed as %s: its execution ended %s", run_id, result["status"], status)
    start_after(services, user_id, run_id)  # a message waiting behind the run gets its turn
    return Reconciled(user_id, run_id, "closed", str(result["status"]))


def _reason(status: str, error: str | None, cause: str | None) -> tuple[str, str]:
    if status == "SUCCEEDED":  # only a ContinueAsNew ends so with the run still open
        return "the run's next execution never started", "ExecutionNotFound"
    if status == "MISSING":
        return "the run's execution could not be found", "ExecutionNotFound"
    what = {"TIMED_OUT": "timed out", "FAILED": "failed"}.get(status, status.lower())
    detail = f": {error}" if error else ""
    if cause:
        detail += f" ({_cause_message(cause)})"
    return f"the run's execution {what}{detail}", error or f"Execution{status.title().replace('_', '')}"


def _cause_message(cause: str) -> str:
    """A Lambda error's cause is its error JSON: keep the message, never the stack trace."""
    try:
        parsed = loads_strict(cause)
    except ValueError:
        return cause[:300]
    fields: dict[str, Any] = dict(parsed) if isinstance(parsed, dict) else {}  # pyright: ignore[reportUnknownArgumentType]
    message = fields.get("errorMessage")
    return str(message)[:300] if message else cause[:300]


def sweep(
    services: Services,
    executions: Executions,
    *,
    now: int | None = None,
    grace_ms: int = DEFAULT_GRACE_MS,
    limit: int = 100,
) -> list[Reconciled]:
    """Close the runs whose execution is gone or has ended without closing them."""
    now = services.clock() if now is None else now
    cutoff = now - grace_ms
    done: list[Reconciled] = []
    for user_id, run_id in services.store.stale_runs(heartbeat_before=cutoff, limit=limit):
        try:
            run = services.store.get_run(user_id, run_id)
        except NotFound:
            continue
        if run.status in TERMINAL["run"] or max(run.heartbeat_at or 0, run.started_at) >= cutoff:
            continue
        found = executions.latest_execution(run_id)
        if found is not None and found.status in ("RUNNING", "PENDING_REDRIVE"):
            done.append(Reconciled(user_id, run_id, "running", run.status))
            continue
        status = "MISSING" if found is None else found.status
        error, cause = (found.error, found.cause) if found is not None else (None, None)
        done.append(close_ended_run(services, user_id, run_id, status=status, error=error, cause=cause))
    return done


def handle_event(services: Services, executions: Executions, event: Mapping[str, Any]) -> dict[str, Any]:
    """The reconciler function: an EventBridge execution status change, or the scheduled sweep."""
    if event.get("detail-type") == "Scheduled Event":
        swept = sweep(services, executions)
        return {"swept": len(swept), "closed": sum(r.outcome == "closed" for r in swept)}
    detail: Mapping[str, Any] = event.get("detail") or {}
    status = str(detail.get("status") or "")
    if status not in CLOSING_STATUSES:
        return {"ignored": status}
    ids = _ids(detail.get("input"))
    if ids is None:
        _LOG.warning("execution %s has no run ids in its input", detail.get("name"))
        return {"ignored": "no run ids"}
    done = close_ended_run(
        services, ids[0], ids[1], status=status, error=_text(detail.get("error")), cause=_text(detail.get("cause"))
    )
    return {"runId": done.run_id, "outcome": done.outcome, "status": done.status}


def _ids(raw: Any) -> tuple[str, str] | None:
    """`(userId, runId)` from the execution's input (a JSON string in the event)."""
    try:
        parsed = loads_strict(raw) if isinstance(raw, str) else raw
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    fields: dict[str, Any] = dict(parsed)  # pyright: ignore[reportUnknownArgumentType]
    user_id, run_id = fields.get("userId"), fields.get("runId")
    if isinstance(user_id, str) and isinstance(run_id, str):
        return user_id, run_id
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None

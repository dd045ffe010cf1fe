"""The end of a run: completed, failed or aborted, written once and never rolled back.

An end races a step that still streams: it is rebuilt from what was appended since the last
attempt until it wins (`store.finish_run`) or finds the run already ended. The end that wins fires
the agent's run-level callback and announces it.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Literal, cast

from ..errors import StepLineError
from ..loop.callbacks import AbortEvent, EndEvent, ErrorEvent
from ..loop.state import LoopState
from ..protocol.chunks import (
    AbortChunk,
    ErrorChunk,
    FinishChunk,
    MessageMetadataChunk,
)
from ..protocol.to_chunks import DEFAULT_ERROR_TEXT
from ..store.errors import ConcurrentUpdate, NotFound, TerminalState
from ..store.ports import FinishRun
from ..store.records import (
    TERMINAL,
    ApprovalRecord,
    EventRecord,
    MessageRecord,
    RunRecord,
)
from . import retries as retry_log
from . import working_runs
from .announce import announce_end
from .callbacks import fire
from .child_results import child_runs, report_end, usage_with_children
from .open_parts import Closing, close_open_parts, end_kind, why_ended
from .recorder import RunRecorder
from .services import Services
from .stream_push import notify
from .traces import request_span, run_ended
from .waits import run_state

__all__ = ["abort_run", "fail_run", "finalize_run"]

_LOG = logging.getLogger("stepline.runtime")
_END_ATTEMPTS = 5 + 60
_END_ATTEMPTS_AT_ONCE = 5
_END_PAUSE_SECONDS = 0.25
"""Ending a run races a step that still streams: each attempt that loses to an append reads only
what was appended and tries again, a few times at once, then every quarter second for 15 s: long
enough for a step that keeps appending to notice an abort mark (`ABORT_POLL_SECONDS` in `worker`)
and stop."""


def _end(
    services: Services,
    user_id: str,
    run_id: str,
    chunks: list[Any],
    status: Literal["completed", "failed", "aborted"],
    metadata: dict[str, Any],
    **fields: Any,
) -> dict[str, Any]:
    store = services.store
    message: MessageRecord | None = None
    written: list[EventRecord] = []
    for attempt in range(_END_ATTEMPTS):
        if attempt >= _END_ATTEMPTS_AT_ONCE:  # a step is still appending: it stops once it sees the mark
            time.sleep(_END_PAUSE_SECONDS)
        run = store.get_run(user_id, run_id)
        if run.status in TERMINAL["run"]:
            _announce_end(services, user_id, run_id)  # the ending attempt's own, if a crash lost it
            return {"userId": user_id, "runId": run_id, "status": run.status}
        # What a step still streaming has written since the last snapshot is in the final message too.
        # A retry reads only what was appended since the last attempt: a step that streams fast must
        # not outrun an end that re-reads its whole log every time.
        if message is None:
            message = store.get_message(user_id, run.conversation_id, run.assistant_message_id)
        after = written[-1].seq if written else message.snapshot_seq
        written += store.events_after(user_id, run_id, after, now=services.clock())
        recorder = RunRecorder(store, run, message, now=services.clock, replay=written)
        closing, ended, last = _closing(services, run, recorder, status, fields.get("cancel_reason")), metadata, chunks
        if status != "completed":  # what this end closed, marked for the client (`open_parts`)
            ended = {**metadata, "closedByEnd": closing.mark(end_kind(status, fields.get("cancel_reason")))}
            last = [MessageMetadataChunk(message_metadata=ended), *chunks]
        event = recorder.final_event([*closing.chunks, *last])
        end = FinishRun(
            status=status,
            snapshot=recorder.snapshot(ended),
            event=event,
            now=services.clock(),
            expire_approvals=tuple(closing.expire_approvals),
            **fields,
        )
        try:
            store.finish_run(user_id, run_id, end)
        except ConcurrentUpdate:  # a step appended, or an approval was decided: build it again
            continue
        except TerminalState:  # ended meanwhile (say, aborted while finishing): the first end stands
            break
        notify(services.stream_push, user_id, run_id, recorder.last_seq + 1)
        _ended(services, run.model_copy(update={"status": status, "ended_at": end.now, **fields}), metadata)
        _announce_end(services, user_id, run_id)
        return {"userId": user_id, "runId": run_id, "status": status}
    _announce_end(services, user_id, run_id)  # another end won meanwhile; announced once all the same
    return {"userId": user_id, "runId": run_id, "status": store.get_run(user_id, run_id).status}


def _closing(services: Services, run: RunRecord, recorder: RunRecorder, status: str, reason: str | None) -> Closing:
    """What closes the tool parts a run that did not complete leaves open (`open_parts`)."""
    if status == "completed":
        return Closing()
    checkpoint = services.store.latest_checkpoint(run.user_id, run.run_id)
    state = None if checkpoint is None else LoopState.model_validate(checkpoint.state)
    questions = set[str]() if state is None else {c.tool_call_id for c in state.pending_client_calls}

    def approval_of(approval_id: str) -> ApprovalRecord | None:
        try:
            return services.store.get_approval(run.user_id, approval_id)
        except NotFound:  # a request whose record a crash lost: nothing can decide it
            return None

    why = why_ended(status, reason)
    return close_open_parts(recorder.parts(), why, approval_of=approval_of, questions=questions)


def _announce_end(services: Services, user_id: str, run_id: str) -> None:
    """The end's announcement and, for a child run, its answer to the parent (each pass: both are once)."""
    announce_end(services, user_id, run_id)
    report_end(services, user_id, run_id)
    run = services.store.get_run(user_id, run_id)
    working_runs.release(services, run)  # every end, the reconciler's too, gives the run's slots back
    for child in child_runs(services, run):  # a parent that ended (aborted, failed, expired) stops its children
        if child.status not in TERMINAL["run"]:
            abort_run(services, user_id, child.run_id, reason="parent_ended")


def _ended(services: Services, run: RunRecord, metadata: dict[str, Any]) -> None:
    """The run's root span and the agent's run-level callback, of the end this call made (once per run)."""
    status = run.status
    agent = services.agent_of_run(run.agent)
    checkpoint = services.store.latest_checkpoint(run.user_id, run.run_id)
    if checkpoint is None:  # a run closed before its first checkpoint (by the reconciler): nothing ran
        state = LoopState(
            run_id=run.run_id, message_id=run.assistant_message_id, started_at=run.started_at, messages=[]
        )
    else:
        state = LoopState.model_validate(checkpoint.state)
    run_ended(services, run, step_count=len(state.steps))
    if status == "completed":
        outcome = state.steps[-1] if state.steps else None
        event: object = EndEvent(
            run.run_id,
            outcome.finish_reason if outcome is not None else None,
            list(state.steps),
            state.usage,
            outcome.text if outcome is not None else "",
            list(state.response_messages),
        )
        fire(agent.on_end, event)
    elif status == "failed":
        error = cast(dict[str, Any], metadata.get("error") or {})
        fire(agent.on_error, ErrorEvent(run.run_id, StepLineError(str(error.get("message") or "the run failed"))))
    else:
        reason = cast(dict[str, Any], metadata.get("abort") or {}).get("reason")
        fire(agent.on_abort, AbortEvent(run.run_id, reason, list(state.steps)))


def finalize_run(services: Services, user_id: str, run_id: str) -> dict[str, Any]:
    """The run finished: the `finish` chunk, completedAt/usage/finishReason, the active run cleared.

    A run marked to be stopped (its step saw the mark and stopped) ends as aborted instead.
    """
    marked = services.store.get_run(user_id, run_id)
    stopped = _stopped_first(services, marked)
    if stopped is not None:
        return stopped
    state = run_state(services, user_id, run_id)
    now = services.clock()
    finish_reason = state.steps[-1].finish_reason if state.steps else "other"
    metadata: dict[str, Any] = {"completedAt": now, "finishReason": finish_reason}
    usage, children = usage_with_children(services, marked, state.usage)  # children's tokens roll up
    if usage is not None:
        metadata["usage"] = usage
    if children:
        metadata["subAgents"] = children
    if state.retries:
        metadata["retries"] = [r.to_wire() for r in state.retries]
    chunk = FinishChunk(finish_reason=_client_finish_reason(finish_reason), message_metadata=metadata)
    return _end(services, user_id, run_id, [chunk], "completed", metadata, finish_reason=finish_reason, usage=usage)


def _stopped_first(services: Services, run: RunRecord) -> dict[str, Any] | None:
    """A live run marked to be stopped ended as aborted with the stop's reason (None: not marked).

    Its step saw the mark and stopped, or failed after it: the stop came first, whichever end follows.
    The execution is not stopped here: the end that called this is its own last state.
    """
    if run.cancel_reason is None or run.status in TERMINAL["run"]:
        return None
    return abort_run(services, run.user_id, run.run_id, reason=run.cancel_reason, stop_execution=False)


def _client_finish_reason(reason: str) -> Any:
    return reason if reason in ("stop", "length", "content-filter", "tool-calls", "error") else "other"


def fail_run(services: Services, user_id: str, run_id: str, message: str, code: str | None = None) -> dict[str, Any]:
    """The run failed: a safe `error` chunk for the client, the real error (masked) kept on the run.

    The partial result stays in the message; the retries made so far go into its metadata. A run
    marked to be stopped ends as aborted instead, as `finalize_run` ends it: the stop came first,
    and a failure after it (a step cut by the stop, say) is not what the person asked for.
    """
    stopped = _stopped_first(services, services.store.get_run(user_id, run_id))
    if stopped is not None:
        _LOG.info("run %s failed after its stop was asked for (%s): ended as aborted", run_id, code or "no code")
        return stopped
    now = services.clock()
    info: dict[str, Any] = {"message": message, "at": now, **({"code": code} if code else {})}
    metadata: dict[str, Any] = {"completedAt": now, "finishReason": "error", "error": info}
    retries = retry_log.run_retries(services.store, user_id, run_id, now=services.clock())
    if retries:
        metadata["retries"] = [r.to_wire() for r in retries]
    chunks = [ErrorChunk(error_text=DEFAULT_ERROR_TEXT)]  # after the metadata `_end` adds
    return _end(services, user_id, run_id, chunks, "failed", metadata, error=info, finish_reason="error")


def abort_run(
    services: Services, user_id: str, run_id: str, *, reason: str = "user_cancelled", stop_execution: bool = True
) -> dict[str, Any]:
    """Stop a run on purpose (a dropped connection is not one): aborted, the workflow stopped.

    The run is marked first (`request_abort`, a write that cannot lose to a streaming step), so its
    step stops within `ABORT_POLL_SECONDS` even when the end below keeps losing to its appends.
    """
    marked = services.store.request_abort(user_id, run_id, reason=reason)
    with request_span(services, "stepline.abort_run", marked if stop_execution else None, {"stepline.reason": reason}):
        now = services.clock()
        metadata: dict[str, Any] = {"completedAt": now, "abort": {"reason": reason, "at": now}}
        chunks = [AbortChunk(reason=reason)]  # after the metadata `_end` adds
        result = _end(services, user_id, run_id, chunks, "aborted", metadata, cancel_reason=reason)
        # Not ended (the step kept winning): leave the execution running; the marked step stops and
        # its FinalizeRun ends the run as aborted.
        if services.orchestrator is not None and stop_execution and result["status"] in TERMINAL["run"]:
            services.orchestrator.stop_run(user_id, run_id)
    return result

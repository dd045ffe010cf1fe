"""What each worker function does: one model step per invocation, waits, expiry, the end of a run.

Step Functions passes only ids (`{"userId", "runId"}`) between states; everything else is read
from the store and written back to it. Every function is safe to run twice (Step Functions
retries a crashed invocation): a step already saved is not saved again, a tool that already ran
is not run again (`StoreToolGuard`), a crashed attempt's streamed parts are dropped with
`reset-step`, and terminal states are never left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, Literal, cast

from pydantic import JsonValue

from ..loop.approval import ApprovalDecision
from ..loop.config import AbortSignal
from ..loop.resume import ClientToolOutput, resume_with_client_outputs, resume_with_decisions
from ..loop.state import LoopState, StepOutcome
from ..loop.step import run_step
from ..protocol.chunks import (
    AbortChunk,
    ErrorChunk,
    FinishChunk,
    MessageMetadataChunk,
    StartChunk,
    ToolApprovalResponseChunk,
)
from ..protocol.to_chunks import DEFAULT_ERROR_TEXT
from ..store.errors import ConcurrentUpdate, Conflict, NotFound, TerminalState
from ..store.history import history_messages
from ..store.ports import FinishRun, TurnStart, TurnStarted
from ..store.records import (
    TERMINAL,
    ApprovalRecord,
    EventRecord,
    MessageRecord,
    RunRecord,
    StepRecordRow,
    ToolCallRecord,
)
from ..tools.context import RunContext
from .recorder import RunRecorder
from .services import Services

__all__ = [
    "abort_run",
    "answer",
    "await_input",
    "begin_turn",
    "decide",
    "expire_input",
    "fail_run",
    "finalize_run",
    "model_step",
    "run_state",
]

_LOG = logging.getLogger("stepline.runtime")
Next = Literal["continue", "await-approval", "await-client", "finished", "failed", "aborted"]
_TERMINAL_NEXT: dict[str, Next] = {"completed": "finished", "failed": "failed", "aborted": "aborted"}
ABORT_POLL_SECONDS = 1.0
_END_ATTEMPTS = 50
"""An end (an abort) races a step that still streams: each attempt that loses to an append reads only
what was appended and tries again; a step appends at most every few tens of milliseconds."""


# -- starting a turn --------------------------------------------------------------------------------


def begin_turn(
    services: Services,
    user_id: str,
    *,
    conversation_id: str,
    run_id: str,
    assistant_message_id: str,
    user_message: dict[str, Any] | None,
    title: str | None = None,
    supersede_seqs: tuple[int, ...] = (),
) -> TurnStarted:
    """Write the turn, its initial checkpoint and its `start` event, then start the workflow.

    `supersede_seqs` are the messages a regenerated answer replaces: they leave the history.
    """
    store, now = services.store, services.clock()
    model = services.model
    metadata: dict[str, Any] = {
        "schemaVersion": 1,
        "provider": model.provider,
        "model": model.model_id,
        "startedAt": now,
        "runId": run_id,
    }
    if services.client:
        metadata["client"] = services.client
    started = store.start_turn(
        user_id,
        TurnStart(
            conversation_id=conversation_id,
            run_id=run_id,
            assistant_message_id=assistant_message_id,
            user_message=user_message,
            provider=model.provider,
            model=model.model_id,
            title=title,
            assistant_metadata=metadata,
            supersede_seqs=supersede_seqs,
            now=now,
        ),
    )
    earlier = [
        m
        for m in store.list_messages(user_id, conversation_id, limit=10_000).items
        if m.message_id != assistant_message_id and m.superseded_by is None
    ]
    state = LoopState(
        run_id=run_id, message_id=assistant_message_id, started_at=now, messages=history_messages(earlier)
    )
    store.save_checkpoint(
        user_id, run_id, state=state.model_dump(mode="json", by_alias=True), reason="step_end", now=now
    )
    recorder = RunRecorder(
        store, started.run, started.assistant_message, now=services.clock, notify=_notifier(services, started.run)
    )
    recorder.write([StartChunk(message_id=assistant_message_id, message_metadata=metadata)])
    recorder.flush()
    if services.orchestrator is not None:
        services.orchestrator.start_run(user_id, run_id)
    return started


# -- one model step ----------------------------------------------------------------------------------


def model_step(services: Services, user_id: str, run_id: str, *, invocation_id: str) -> dict[str, Any]:
    """Run the next step of a run (after applying what it waited for); returns `{"next": kind}`."""
    return asyncio.run(_model_step(services, user_id, run_id, invocation_id))


async def _model_step(services: Services, user_id: str, run_id: str, invocation_id: str) -> dict[str, Any]:
    store = services.store
    run = store.get_run(user_id, run_id)
    if run.status in TERMINAL["run"]:
        return _reply(run, _TERMINAL_NEXT[run.status])
    checkpoint = store.latest_checkpoint(user_id, run_id)
    assert checkpoint is not None, "a run always has its initial checkpoint"
    state = LoopState.model_validate(checkpoint.state)
    approvals = _run_approvals(services, user_id, run_id, state)
    if not _approvals_recorded(state, approvals):
        return _finish_approval_request(services, run, state)
    decisions, undecided = _decisions(services, user_id, approvals)
    outputs, unanswered = _client_outputs(services, user_id, run_id, state)
    if undecided or unanswered:
        return _reply(run, "await-approval" if undecided else "await-client")
    run = store.mark_running(user_id, run_id, now=services.clock())
    message = store.get_message(user_id, run.conversation_id, run.assistant_message_id)
    # The snapshot may lag the log (a crashed attempt) or include more than the checkpoint (a failed
    # attempt saves what the client saw): read from the earlier of the two, once.
    since = store.events_after(
        user_id, run_id, min(message.snapshot_seq, checkpoint.last_event_seq), now=services.clock()
    )
    replay = [e for e in since if e.seq > message.snapshot_seq]
    recorder = RunRecorder(
        store,
        run,
        message,
        now=services.clock,
        window=services.delta_window,
        replay=replay,
        notify=_notifier(services, run),
    )
    attempted = [c for e in since if e.seq > checkpoint.last_event_seq for c in e.chunks]
    if any(c.get("type") == "start-step" for c in attempted):
        recorder.redo_step()  # an attempt of this step that crashed or failed streamed parts: drop them
    abort = AbortSignal()
    context = RunContext(
        user_id=user_id,
        conversation_id=run.conversation_id,
        run_id=run_id,
        message_id=run.assistant_message_id,
        store=store,
        blobs=services.blobs,
    )
    config = services.loop_config(
        user_id=user_id, run_id=run_id, claim_token=invocation_id, abort=abort, runtime_context=context
    )
    watcher = asyncio.create_task(_watch_abort(services, user_id, run_id, abort))
    timer = asyncio.create_task(_flush_on_time(recorder, services.delta_window))
    try:
        if decisions:
            recorder.write([_response_chunk(d) for d in decisions])
            state = await resume_with_decisions(config, state, decisions, emit=recorder.emit)
        if outputs:
            state = await resume_with_client_outputs(config, state, outputs, emit=recorder.emit)
        outcome = await _step_until_abort(config, state, recorder, abort)
    finally:
        for task in (watcher, timer):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    recorder.flush()
    if outcome is None:
        return _reply(run, "aborted")
    return _persist(services, run, outcome, recorder)


def _response_chunk(decision: ApprovalDecision) -> ToolApprovalResponseChunk:
    """The decision as the client's own `addToolApprovalResponse` records it on the part.

    The SDK does not stream it on a continuation (the client already holds it); the stored message
    and a client following the run from elsewhere (the resume stream, another tab) need it.
    """
    chunk = ToolApprovalResponseChunk(approval_id=decision.approval_id, approved=decision.approved)
    if decision.reason is not None:  # set only when there is one: absent on the wire, never null
        chunk.reason = decision.reason
    return chunk


async def _step_until_abort(
    config: Any, state: LoopState, recorder: RunRecorder, abort: AbortSignal
) -> StepOutcome | None:
    step = asyncio.create_task(run_step(config, state, emit=recorder.emit))
    stop = asyncio.create_task(abort.wait())
    done, _ = await asyncio.wait({step, stop}, return_when=asyncio.FIRST_COMPLETED)
    stop.cancel()
    if step in done:
        return step.result()
    step.cancel()  # the run was aborted: stop streaming now
    with contextlib.suppress(asyncio.CancelledError):
        await step
    return None


async def _flush_on_time(recorder: RunRecorder, window: float) -> None:
    """Write held deltas when their window passes, also while the model is silent."""
    while True:
        due = recorder.tick()
        await asyncio.sleep(window if due is None else max(due - time.monotonic(), 0.005))


async def _watch_abort(services: Services, user_id: str, run_id: str, abort: AbortSignal) -> None:
    """Notice within about a second that the run was aborted (the API marks it in the store)."""
    while not abort.aborted:
        await asyncio.sleep(ABORT_POLL_SECONDS)
        if services.store.get_run(user_id, run_id).status == "aborted":
            abort.abort("aborted by the user")


def _approvals_recorded(state: LoopState, approvals: list[ApprovalRecord]) -> bool:
    recorded = {a.approval_id for a in approvals}
    return all(p.approval_id in recorded for p in state.pending_approvals)


def _run_approvals(services: Services, user_id: str, run_id: str, state: LoopState) -> list[ApprovalRecord]:
    """The stored approvals of the state's pending calls (one not recorded yet is left out)."""
    found: list[ApprovalRecord] = []
    for pending in state.pending_approvals:
        with contextlib.suppress(NotFound):  # any other store error propagates: never read as "absent"
            found.append(services.store.get_approval(user_id, pending.approval_id))
    return [a for a in found if a.run_id == run_id]


def _decisions(
    services: Services, user_id: str, approvals: list[ApprovalRecord]
) -> tuple[list[ApprovalDecision], bool]:
    decisions: list[ApprovalDecision] = []
    undecided = False
    for record in approvals:
        if record.status == "processing":
            record = services.store.settle_approval(user_id, record.approval_id, now=services.clock())
        if record.status == "requested":
            undecided = True
            continue
        expired = record.status == "expired"
        decisions.append(
            ApprovalDecision(
                approval_id=record.approval_id,
                approved=record.status == "approved",
                reason="approval expired" if expired else record.reason,
                signature=record.signature,
            )
        )
    return decisions, undecided


def _client_outputs(
    services: Services, user_id: str, run_id: str, state: LoopState
) -> tuple[list[ClientToolOutput], bool]:
    if not state.pending_client_calls:
        return [], False
    rows = {c.tool_call_id: c for c in services.store.list_tool_calls(user_id, run_id)}
    outputs: list[ClientToolOutput] = []
    for call in state.pending_client_calls:
        row = rows.get(call.tool_call_id)
        if row is None or row.status not in TERMINAL["tool_call"]:
            return [], True
        error = str(row.error.get("message")) if row.error else None
        outputs.append(ClientToolOutput(tool_call_id=call.tool_call_id, output=row.output, error_text=error))
    return outputs, False


# -- persisting a step ----------------------------------------------------------------------------------


def _tool_rows(run: RunRecord, state: LoopState) -> list[ToolCallRecord]:
    if not state.steps:
        return []
    step = state.steps[-1]
    results = {r.tool_call_id: r for r in step.tool_results}
    awaiting = {p.tool_call.tool_call_id for p in state.pending_approvals}
    rows: list[ToolCallRecord] = []
    for call in step.tool_calls:
        result = results.get(call.tool_call_id)
        status: Any = "pending"
        if call.tool_call_id in awaiting:
            status = "awaiting_approval"
        elif result is not None:
            status = "denied" if result.denied else ("error" if result.error_text is not None else "success")
        rows.append(
            ToolCallRecord(
                user_id=run.user_id,
                run_id=run.run_id,
                tool_call_id=call.tool_call_id,
                tool_name=call.tool_name,
                step_index=step.step_number,
                status=status,
                input=call.input,
                output=result.output if result is not None else None,
                error={"message": result.error_text} if result is not None and result.error_text is not None else None,
            )
        )
    return rows


def _persist(services: Services, run: RunRecord, outcome: StepOutcome, recorder: RunRecorder) -> dict[str, Any]:
    store, now, state = services.store, services.clock(), outcome.state
    snapshot = recorder.snapshot()
    checkpoint_state = state.model_dump(mode="json", by_alias=True)
    if outcome.kind == "failed":  # the failed step is not in the state; keep what the client saw
        store.save_snapshot(run.user_id, run.run_id, snapshot, now=now)
        error = {"message": outcome.error_text or "step failed", "code": outcome.error_code}
        return _reply(run, "failed", error=error, retryable=outcome.retryable)
    step = state.steps[-1]
    row = StepRecordRow(
        user_id=run.user_id,
        run_id=run.run_id,
        step_index=step.step_number,
        status="completed",
        finish_reason=step.finish_reason,
        usage=cast(dict[str, JsonValue], step.usage.to_metadata()),
        response_messages=[m.to_wire() for m in step.response_messages],
        provider_metadata=cast(dict[str, JsonValue] | None, step.provider_metadata),
        started_at=now,
        ended_at=now,
    )
    run_status: Any = "waiting_user" if outcome.kind == "await-client" else None
    try:
        store.save_step(
            run.user_id,
            run.run_id,
            step=row,
            tool_calls=_tool_rows(run, state),
            snapshot=snapshot,
            checkpoint_state=checkpoint_state,
            now=now,
            run_status=run_status,
        )
    except Conflict:
        _LOG.info("step %s of run %s was already saved", step.step_number, run.run_id)
    if outcome.kind == "await-approval":
        _request_approvals(services, run, state, snapshot)
    _notify(services, run.user_id, run.run_id, recorder.last_seq)  # a wait is a change of status only
    return _reply(run, outcome.kind, steps=step.step_number + 1)


def _request_approvals(services: Services, run: RunRecord, state: LoopState, snapshot: Any) -> None:
    now = services.clock()
    approvals = [
        ApprovalRecord(
            user_id=run.user_id,
            approval_id=p.approval_id,
            run_id=run.run_id,
            tool_call_id=p.tool_call.tool_call_id,
            tool_name=p.tool_call.tool_name,
            input=p.tool_call.input,
            signature=p.signature,
            reason=p.reason,
            requested_at=p.requested_at,
            expires_at=now + services.approval_timeout_ms,
        )
        for p in state.pending_approvals
    ]
    awaiting = [r for r in _tool_rows(run, state) if r.status == "awaiting_approval"]
    services.store.request_approval(
        run.user_id,
        run.run_id,
        approvals=approvals,
        tool_calls=awaiting,
        snapshot=snapshot,
        checkpoint_state=state.model_dump(mode="json", by_alias=True),
        event=None,
        now=now,
    )


def _finish_approval_request(services: Services, run: RunRecord, state: LoopState) -> dict[str, Any]:
    """A crash between saving the step and recording its approvals: record them now."""
    message = services.store.get_message(run.user_id, run.conversation_id, run.assistant_message_id)
    recorder = RunRecorder(services.store, run, message, now=services.clock)
    _request_approvals(services, run, state, recorder.snapshot())
    return _reply(run, "await-approval")


def _notifier(services: Services, run: RunRecord) -> Callable[[int], None] | None:
    """What a recorder calls after each append: the run's streams read the log at once."""
    if services.notifier is None:
        return None
    return lambda seq: _notify(services, run.user_id, run.run_id, seq)


def _notify(services: Services, user_id: str, run_id: str, seq: int) -> None:
    if services.notifier is None:
        return
    try:
        services.notifier.notify(user_id, run_id, seq)
    except Exception:  # a lost notification costs the stream one poll interval, never the write
        _LOG.warning("notifying the streams of run %s failed", run_id, exc_info=True)


def _reply(run: RunRecord, next_kind: Next, **extra: Any) -> dict[str, Any]:
    return {"userId": run.user_id, "runId": run.run_id, "next": next_kind, **extra}


# -- waiting ------------------------------------------------------------------------------------------------


def await_input(services: Services, user_id: str, run_id: str, task_token: str) -> dict[str, Any]:
    """Store the task token with what the run waits for; resume at once if it was already decided."""
    store = services.store
    run = store.get_run(user_id, run_id)
    if run.status == "waiting_user":
        store.attach_run_token(user_id, run_id, task_token)
        if not _client_outputs(services, user_id, run_id, run_state(services, user_id, run_id))[1]:
            _resume(services, task_token)
        return {"waiting": "client"}
    waiting = False
    state = run_state(services, user_id, run_id)
    for approval in _run_approvals(services, user_id, run_id, state):
        if approval.status == "requested":
            with contextlib.suppress(Conflict):  # decided between the read and this write
                store.attach_task_token(user_id, approval.approval_id, task_token)
                waiting = True
    if not waiting or not _still_requested(services, user_id, run_id, state):  # re-read: decided meanwhile?
        _resume(services, task_token)
    return {"waiting": "approval"}


def run_state(services: Services, user_id: str, run_id: str) -> LoopState:
    """The run's latest checkpoint (every run has one from its start)."""
    checkpoint = services.store.latest_checkpoint(user_id, run_id)
    assert checkpoint is not None
    return LoopState.model_validate(checkpoint.state)


def _still_requested(services: Services, user_id: str, run_id: str, state: LoopState) -> bool:
    return any(a.status == "requested" for a in _run_approvals(services, user_id, run_id, state))


def _resume(services: Services, task_token: str) -> None:
    if services.orchestrator is not None and not services.orchestrator.resume(task_token):
        _LOG.info("task already resumed or expired")


def expire_input(services: Services, user_id: str, run_id: str) -> dict[str, Any]:
    """The wait timed out: pending approvals expire (the model reads a denial), questions get an error."""
    store, now = services.store, services.clock()
    state = run_state(services, user_id, run_id)
    for approval in _run_approvals(services, user_id, run_id, state):
        store.expire_approval(user_id, approval.approval_id, now=now)
    for call in state.pending_client_calls:
        with contextlib.suppress(Conflict):
            store.answer_tool_call(
                user_id, run_id, call.tool_call_id, error={"message": "no answer before the timeout"}, now=now
            )
    return {"userId": user_id, "runId": run_id}


def decide(services: Services, user_id: str, approval_id: str, *, approved: bool, reason: str | None) -> ApprovalRecord:
    """The approval webhook's core: decide once (compare-and-set), then resume the workflow.

    Raises the store's `NotFound` (404), `Gone` (410) and `DecisionConflict` (409). Deciding the same
    way again returns the stored approval.
    """
    store = services.store
    result = store.decide_approval(user_id, approval_id, approved=approved, reason=reason, now=services.clock())
    approval = store.settle_approval(user_id, approval_id, now=services.clock())
    run_still_waiting = _still_requested(
        services, user_id, approval.run_id, run_state(services, user_id, approval.run_id)
    )
    if result.first and approval.task_token and not run_still_waiting:
        _resume(services, approval.task_token)
    return approval


def answer(
    services: Services, user_id: str, run_id: str, tool_call_id: str, *, output: Any, error_text: str | None
) -> ToolCallRecord:
    """A client's output for a question (client-side tool); resumes the run once all are answered."""
    error: dict[str, JsonValue] | None = {"message": error_text} if error_text is not None else None
    row = services.store.answer_tool_call(
        user_id, run_id, tool_call_id, output=output, error=error, now=services.clock()
    )
    run = services.store.get_run(user_id, run_id)
    if run.task_token and not _client_outputs(services, user_id, run_id, run_state(services, user_id, run_id))[1]:
        _resume(services, run.task_token)
    return row


# -- the end of a run ----------------------------------------------------------------------------------


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
    for _ in range(_END_ATTEMPTS):
        run = store.get_run(user_id, run_id)
        if run.status in TERMINAL["run"]:
            return {"userId": user_id, "runId": run_id, "status": run.status}
        # What a step still streaming has written since the last snapshot is in the final message too.
        # A retry reads only what was appended since the last attempt: a step that streams fast must
        # not outrun an end that re-reads its whole log every time.
        if message is None:
            message = store.get_message(user_id, run.conversation_id, run.assistant_message_id)
        after = written[-1].seq if written else message.snapshot_seq
        written += store.events_after(user_id, run_id, after, now=services.clock())
        recorder = RunRecorder(store, run, message, now=services.clock, replay=written)
        event = recorder.final_event(chunks)
        end = FinishRun(
            status=status, snapshot=recorder.snapshot(metadata), event=event, now=services.clock(), **fields
        )
        try:
            store.finish_run(user_id, run_id, end)
        except ConcurrentUpdate:  # a step appended meanwhile: the snapshot would miss it, build it again
            continue
        except TerminalState:  # ended meanwhile (say, aborted while finishing): the first end stands
            break
        _notify(services, user_id, run_id, recorder.last_seq + 1)
        return {"userId": user_id, "runId": run_id, "status": status}
    return {"userId": user_id, "runId": run_id, "status": store.get_run(user_id, run_id).status}


def finalize_run(services: Services, user_id: str, run_id: str) -> dict[str, Any]:
    """The run finished: the `finish` chunk, completedAt/usage/finishReason, the active run cleared."""
    state = run_state(services, user_id, run_id)
    now = services.clock()
    finish_reason = state.steps[-1].finish_reason if state.steps else "other"
    metadata: dict[str, Any] = {"completedAt": now, "finishReason": finish_reason}
    usage = state.usage.to_metadata()
    if usage is not None:
        metadata["usage"] = usage
    if state.retries:
        metadata["retries"] = [r.to_wire() for r in state.retries]
    chunk = FinishChunk(finish_reason=_client_finish_reason(finish_reason), message_metadata=metadata)
    return _end(services, user_id, run_id, [chunk], "completed", metadata, finish_reason=finish_reason, usage=usage)


def _client_finish_reason(reason: str) -> Any:
    return reason if reason in ("stop", "length", "content-filter", "tool-calls", "error") else "other"


def fail_run(services: Services, user_id: str, run_id: str, message: str, code: str | None = None) -> dict[str, Any]:
    """The run failed: a safe `error` chunk for the client, the real error kept on the run."""
    now = services.clock()
    info: dict[str, Any] = {"message": message, "at": now, **({"code": code} if code else {})}
    metadata: dict[str, Any] = {"completedAt": now, "finishReason": "error", "error": info}
    chunks = [MessageMetadataChunk(message_metadata=metadata), ErrorChunk(error_text=DEFAULT_ERROR_TEXT)]
    return _end(services, user_id, run_id, chunks, "failed", metadata, error=info, finish_reason="error")


def abort_run(services: Services, user_id: str, run_id: str, *, reason: str = "user_cancelled") -> dict[str, Any]:
    """Stop a run on purpose (a dropped connection is not one): aborted, the workflow stopped."""
    now = services.clock()
    metadata: dict[str, Any] = {"completedAt": now, "abort": {"reason": reason, "at": now}}
    chunks = [MessageMetadataChunk(message_metadata=metadata), AbortChunk(reason=reason)]
    result = _end(services, user_id, run_id, chunks, "aborted", metadata, cancel_reason=reason)
    if services.orchestrator is not None:
        services.orchestrator.stop_run(user_id, run_id)
    return result

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
from collections.abc import Callable, Mapping
from typing import Any, Literal, cast

from pydantic import JsonValue

from ..agent.definition import Agent
from ..errors import StepLineError
from ..loop.approval import ApprovalDecision
from ..loop.callbacks import AbortEvent, EndEvent, ErrorEvent, StartEvent
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
from . import retries as retry_log
from .announce import announce_approvals, announce_end, announce_question
from .callbacks import fire
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
    "run_context_of",
    "run_state",
    "wait_seconds",
]

_LOG = logging.getLogger("stepline.runtime")
Next = Literal["continue", "await-approval", "await-client", "finished", "failed", "aborted"]
_TERMINAL_NEXT: dict[str, Next] = {"completed": "finished", "failed": "failed", "aborted": "aborted"}
ABORT_POLL_SECONDS = 1.0
_END_ATTEMPTS = 5 + 60
_END_ATTEMPTS_AT_ONCE = 5
_END_PAUSE_SECONDS = 0.25
"""Ending a run races a step that still streams: each attempt that loses to an append reads only
what was appended and tries again, a few times at once, then every quarter second for 15 s: long
enough for a step that keeps appending to notice an abort mark (`ABORT_POLL_SECONDS`) and stop."""


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
    agent: str | None = None,
    claims: Mapping[str, JsonValue] | None = None,
    body: Mapping[str, JsonValue] | None = None,
) -> TurnStarted:
    """Write the turn, its initial checkpoint and its `start` event, then start the workflow.

    `supersede_seqs` are the messages a regenerated answer replaces: they leave the history.
    `agent` names the agent of a new conversation (an existing one keeps its own; an unknown name
    raises `UnknownAgentError`); `claims` and `body` become the run's fixed context.
    """
    store, now = services.store, services.clock()
    chosen = _turn_agent(services, user_id, conversation_id, agent)
    model = services.model_for(chosen)
    metadata: dict[str, Any] = {
        "schemaVersion": 1,
        "provider": model.provider,
        "model": model.model_id,
        "startedAt": now,
        "runId": run_id,
    }
    if services.client:
        metadata["client"] = services.client
    context: dict[str, JsonValue] = {"claims": dict(claims or {"sub": user_id}), "body": dict(body or {})}
    started = store.start_turn(
        user_id,
        TurnStart(
            conversation_id=conversation_id,
            run_id=run_id,
            assistant_message_id=assistant_message_id,
            user_message=user_message,
            provider=model.provider,
            model=model.model_id,
            agent=chosen.name,
            agent_fingerprint=chosen.fingerprint(),
            context=context,
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
    history = history_messages(
        earlier,
        budget_chars=chosen.history_budget_chars,
        reasoning=chosen.reasoning_history,
        model_supports_reasoning=model.capabilities.reasoning_history,
    )
    state = LoopState(run_id=run_id, message_id=assistant_message_id, started_at=now, messages=history)
    store.save_checkpoint(
        user_id, run_id, state=state.model_dump(mode="json", by_alias=True), reason="step_end", now=now
    )
    recorder = RunRecorder(
        store, started.run, started.assistant_message, now=services.clock, notify=_notifier(services, started.run)
    )
    recorder.write([StartChunk(message_id=assistant_message_id, message_metadata=metadata)])
    recorder.flush()
    run_context = run_context_of(services, started.run)
    failed = fire(
        chosen.on_start,
        StartEvent(run_id, model.provider, model.model_id, state.messages, [t.name for t in chosen.tools], run_context),
    )
    if failed is not None:  # the run ends before its first step (never left working without a workflow)
        fail_run(services, user_id, run_id, f"on_start failed: {failed}", "callback_error")
        return started
    if services.orchestrator is not None:
        services.orchestrator.start_run(user_id, run_id)
    return started


def _turn_agent(services: Services, user_id: str, conversation_id: str, requested: str | None) -> Agent:
    """The conversation's own agent when it has one (fixed for its life), else the requested one."""
    with contextlib.suppress(NotFound):
        existing = services.store.get_conversation(user_id, conversation_id).agent
        if existing is not None:
            return services.agent_of_run(existing)
    return services.agent(requested)


def run_context_of(services: Services, run: RunRecord) -> RunContext:
    """The run's context as it was fixed when it started, with this process's ports."""
    stored = run.context or {}
    claims = stored.get("claims")
    body = stored.get("body")
    return RunContext(
        user_id=run.user_id,
        conversation_id=run.conversation_id,
        run_id=run.run_id,
        message_id=run.assistant_message_id,
        store=services.store,
        blobs=services.blobs,
        claims=cast(dict[str, JsonValue], claims) if isinstance(claims, dict) else {"sub": run.user_id},
        body=cast(dict[str, JsonValue], body) if isinstance(body, dict) else {},
        agent=run.agent or services.agent_set.default_name,
    )


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
    attempts = [e for e in since if e.seq > checkpoint.last_event_seq]
    state = retry_log.redo_attempts(state, attempts, recorder, now=services.clock())
    abort = AbortSignal()
    agent = services.agent_of_run(run.agent, run.agent_fingerprint)
    config = await services.step_config(
        agent,
        user_id=user_id,
        run_id=run_id,
        claim_token=invocation_id,
        context=run_context_of(services, run),
        abort=abort,
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
    if outcome.kind == "failed":
        return _failed(services, run, outcome, recorder, retry_log.step_retries(attempts))
    return _persist(services, run, outcome, recorder)


def _failed(
    services: Services, run: RunRecord, outcome: StepOutcome, recorder: RunRecorder, step_retries: int
) -> dict[str, Any]:
    """A failed step: handed back to Step Functions to retry, or the end of the run.

    `retry.may_retry` decided `outcome.retryable`; a retryable step goes back while its retries
    last, else the run fails here with the partial result kept.

    The reply carries ids and a stable code only: the error's text goes to the run (masked), never
    into the state machine's payloads and history.
    """
    code = outcome.error_code
    if outcome.retryable and step_retries < retry_log.STEP_RETRIES:
        reason = f"{(code or 'model error').replace('_', ' ')}; step retried"
        recorder.write([retry_log.marker(reason, len(outcome.state.retries) + 1)])
        recorder.flush()
        services.store.save_snapshot(run.user_id, run.run_id, recorder.snapshot(), now=services.clock())
        return _reply(run, "failed", error={"code": code}, retryable=True)
    services.store.save_snapshot(run.user_id, run.run_id, recorder.snapshot(), now=services.clock())
    fail_run(services, run.user_id, run.run_id, outcome.error_text or "the step failed", code)
    return _reply(run, "failed", error={"code": code})


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
        run = services.store.get_run(user_id, run_id)
        if run.status == "aborted" or run.cancel_reason is not None:  # ended, or asked to stop
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
        if call.provider_executed:
            continue  # the provider ran it: never claimed, so no row (a pending one would end as an error)
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
    elif outcome.kind == "await-client":
        announce_question(services, run, state)
    _notify(services, run.user_id, run.run_id, recorder.last_seq)  # a wait is a change of status only
    timing = {} if recorder.first_output_ms is None else {"firstOutputMs": recorder.first_output_ms}
    return _reply(run, outcome.kind, steps=step.step_number + 1, **timing)


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
    announce_approvals(services, run, state)


def _finish_approval_request(services: Services, run: RunRecord, state: LoopState) -> dict[str, Any]:
    """A crash between saving the step and recording its approvals: record them now."""
    message = services.store.get_message(run.user_id, run.conversation_id, run.assistant_message_id)
    recorder = RunRecorder(services.store, run, message, now=services.clock)
    _request_approvals(services, run, state, recorder.snapshot())
    return _reply(run, "await-approval")


def _notifier(services: Services, run: RunRecord) -> Callable[[int], None] | None:
    """What a recorder calls after each append: the run's streams read the log at once."""
    if services.stream_push is None:
        return None
    return lambda seq: _notify(services, run.user_id, run.run_id, seq)


def _notify(services: Services, user_id: str, run_id: str, seq: int) -> None:
    if services.stream_push is None:
        return
    try:
        services.stream_push.notify(user_id, run_id, seq)
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
        announce_question(services, run, run_state(services, user_id, run_id))  # if the step's own was lost
        if not _client_outputs(services, user_id, run_id, run_state(services, user_id, run_id))[1]:
            _resume(services, task_token)
        return {"waiting": "client"}
    waiting = False
    state = run_state(services, user_id, run_id)
    announce_approvals(services, run, state)  # the step's own announcement, if a crash lost it
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


def wait_seconds(services: Services, user_id: str, run_id: str) -> int:
    """How long the wait the run enters may last: until the deadline stored when it began (at least 1 s).

    An approval's deadline is its `expires_at`; a question's is its checkpoint's time plus the
    timeout. AwaitInput reads this (`TimeoutSecondsPath`), so a wait rolled over to a new execution
    (continue-as-new, or the local runtime's restart) keeps its first deadline.
    """
    now = services.clock()
    checkpoint = services.store.latest_checkpoint(user_id, run_id)
    assert checkpoint is not None
    state = LoopState.model_validate(checkpoint.state)
    deadlines = [
        a.expires_at
        for a in _run_approvals(services, user_id, run_id, state)
        if a.status == "requested" and a.expires_at is not None
    ]
    if not deadlines:
        deadlines = [checkpoint.created_at + services.approval_timeout_ms]
    return max(1, -(-(min(deadlines) - now) // 1000))


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


def decide(
    services: Services,
    user_id: str,
    approval_id: str,
    *,
    approved: bool,
    reason: str | None,
    decided_by: str | None = None,
) -> ApprovalRecord:
    """The approval webhook's core: decide once (compare-and-set), then resume the workflow.

    Raises the store's `NotFound` (404), `Gone` (410) and `DecisionConflict` (409). Deciding the same
    way again returns the stored approval. `decided_by` is recorded on it: the user (the default), or
    `link` for a signed approval link.
    """
    store = services.store
    result = store.decide_approval(
        user_id,
        approval_id,
        approved=approved,
        reason=reason,
        now=services.clock(),
        decided_by=decided_by or user_id,
    )
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
    for attempt in range(_END_ATTEMPTS):
        if attempt >= _END_ATTEMPTS_AT_ONCE:  # a step is still appending: it stops once it sees the mark
            time.sleep(_END_PAUSE_SECONDS)
        run = store.get_run(user_id, run_id)
        if run.status in TERMINAL["run"]:
            announce_end(services, user_id, run_id)  # the ending attempt's own, if a crash lost it
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
        _ended(services, run, status, metadata)
        announce_end(services, user_id, run_id)
        return {"userId": user_id, "runId": run_id, "status": status}
    announce_end(services, user_id, run_id)  # another end won meanwhile; announced once all the same
    return {"userId": user_id, "runId": run_id, "status": store.get_run(user_id, run_id).status}


def _ended(services: Services, run: RunRecord, status: str, metadata: dict[str, Any]) -> None:
    """The agent's run-level callback of the end this call made (once per run)."""
    agent = services.agent_of_run(run.agent)
    checkpoint = services.store.latest_checkpoint(run.user_id, run.run_id)
    if checkpoint is None:  # a run closed before its first checkpoint (by the reconciler): nothing ran
        state = LoopState(
            run_id=run.run_id, message_id=run.assistant_message_id, started_at=run.started_at, messages=[]
        )
    else:
        state = LoopState.model_validate(checkpoint.state)
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
    if marked.cancel_reason is not None and marked.status not in TERMINAL["run"]:
        return abort_run(services, user_id, run_id, reason=marked.cancel_reason, stop_execution=False)
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
    """The run failed: a safe `error` chunk for the client, the real error (masked) kept on the run.

    The partial result stays in the message; the retries made so far go into its metadata.
    """
    now = services.clock()
    info: dict[str, Any] = {"message": message, "at": now, **({"code": code} if code else {})}
    metadata: dict[str, Any] = {"completedAt": now, "finishReason": "error", "error": info}
    retries = retry_log.run_retries(services.store, user_id, run_id, now=services.clock())
    if retries:
        metadata["retries"] = [r.to_wire() for r in retries]
    chunks = [MessageMetadataChunk(message_metadata=metadata), ErrorChunk(error_text=DEFAULT_ERROR_TEXT)]
    return _end(services, user_id, run_id, chunks, "failed", metadata, error=info, finish_reason="error")


def abort_run(
    services: Services, user_id: str, run_id: str, *, reason: str = "user_cancelled", stop_execution: bool = True
) -> dict[str, Any]:
    """Stop a run on purpose (a dropped connection is not one): aborted, the workflow stopped.

    The run is marked first (`request_abort`, a write that cannot lose to a streaming step), so its
    step stops within `ABORT_POLL_SECONDS` even when the end below keeps losing to its appends.
    """
    services.store.request_abort(user_id, run_id, reason=reason)
    now = services.clock()
    metadata: dict[str, Any] = {"completedAt": now, "abort": {"reason": reason, "at": now}}
    chunks = [MessageMetadataChunk(message_metadata=metadata), AbortChunk(reason=reason)]
    result = _end(services, user_id, run_id, chunks, "aborted", metadata, cancel_reason=reason)
    # Not ended (the step kept winning): leave the execution running; the marked step stops and
    # its FinalizeRun ends the run as aborted.
    if services.orchestrator is not None and stop_execution and result["status"] in TERMINAL["run"]:
        services.orchestrator.stop_run(user_id, run_id)
    return result

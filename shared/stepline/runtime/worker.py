"""The model step: one per invocation, the worker function the state machine calls most.

The other worker functions live by job: the start of a turn in `turn`, its waits in `waits`, the
end of a run in `ending`.

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
from typing import Any, Literal, cast

from pydantic import JsonValue

from ..agent.delegation import agent_tools_of
from ..loop.approval import ApprovalDecision
from ..loop.config import AbortSignal
from ..loop.state import LoopState, StepOutcome
from ..loop.step import run_step
from ..store.errors import Conflict
from ..store.records import (
    TERMINAL,
    ApprovalRecord,
    RunRecord,
    StepRecordRow,
    ToolCallRecord,
)
from . import inbox, inspection, working_runs
from . import retries as retry_log
from .announce import announce_approvals, announce_question
from .budget_wait import budget_record, pending_ids, request_budget_approval
from .child_approvals import raise_requests
from .child_results import child_raises, missing_child_agent
from .child_stream import mirror_progress
from .compaction import compaction_step, offloaded
from .ending import fail_run
from .recorder import RunRecorder
from .resume_step import resume_waited
from .run_tree import take_raises, tree_of
from .safe_point import ToolsStarted
from .services import Services
from .stream_push import notifier, notify
from .turn import run_context_of
from .waits import client_outputs, run_approvals
from .watchers import delta_window_of

__all__ = ["model_step"]

_LOG = logging.getLogger("stepline.runtime")
Next = Literal["continue", "await-approval", "await-client", "finished", "failed", "aborted"]
_TERMINAL_NEXT: dict[str, Next] = {"completed": "finished", "failed": "failed", "aborted": "aborted"}
ABORT_POLL_SECONDS = 1.0


# -- one model step ----------------------------------------------------------------------------------


def model_step(services: Services, user_id: str, run_id: str, *, invocation_id: str) -> dict[str, Any]:
    """Run the next step of a run (after applying what it waited for); returns `{"next": kind}`."""
    reply = asyncio.run(_model_step(services, user_id, run_id, invocation_id))
    if reply["next"] in ("await-approval", "await-client") and working_runs.capped(services):
        working_runs.release(services, services.store.get_run(user_id, run_id))  # parked: its slots go back
    return reply


async def _model_step(services: Services, user_id: str, run_id: str, invocation_id: str) -> dict[str, Any]:
    store = services.store
    run = store.get_run(user_id, run_id)
    if run.status in TERMINAL["run"]:
        return _reply(run, _TERMINAL_NEXT[run.status])
    if run.cancel_reason is not None:  # asked to stop between steps: FinalizeRun ends it as aborted
        return _reply(run, "aborted")
    if missing_child_agent(services, run):  # a sub-agent redeployed away: a tool error for the parent
        fail_run(services, user_id, run_id, f"the agent {run.agent} is no longer deployed", "agent_not_deployed")
        return _reply(run, "failed", error={"code": "agent_not_deployed"})
    checkpoint = store.latest_checkpoint(user_id, run_id)
    assert checkpoint is not None, "a run always has its initial checkpoint"
    state = LoopState.model_validate(checkpoint.state)
    approvals = run_approvals(services, user_id, run_id, state)
    if not _approvals_recorded(state, approvals):
        return _finish_approval_request(services, run, state)
    decisions, undecided = _decisions(services, user_id, approvals)
    if services.telemetry is not None and decisions:  # the requests that decided what this step resumes with
        services.telemetry.link_current([a.decision_trace for a in approvals], "decided")
    outputs, unanswered = client_outputs(services, user_id, run_id, state)
    if undecided or unanswered:
        return _reply(run, "await-approval" if undecided else "await-client")
    run = store.mark_running(user_id, run_id, now=services.clock())
    working_runs.hold(services, run)  # taken back after a wait, renewed between steps
    if not decisions and not outputs:  # a step boundary: the messages steering the run join it here
        state, checkpoint = inbox.deliver_steers(services, run, state, checkpoint)
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
        replay=replay,
        notify=notifier(services.stream_push, run.user_id, run.run_id),
    )
    _follow_watchers(recorder, services, run)
    attempts = [e for e in since if e.seq > checkpoint.last_event_seq]
    state = retry_log.redo_attempts(state, attempts, recorder, now=services.clock())
    abort = AbortSignal()
    agent = services.agent_of_run(run.agent, run.agent_fingerprint)
    tree = tree_of(run, delegates=bool(agent_tools_of(agent)))
    config = await services.step_config(
        agent,
        user_id=user_id,
        run_id=run_id,
        claim_token=invocation_id,
        context=run_context_of(services, run),
        tree=tree,
        abort=abort,
    )
    if tree is not None and outputs:  # its sub-agents' answers: what a person raised on them, it takes too
        state = take_raises(state, config.limits, child_raises(services, run, [o.tool_call_id for o in outputs]))
    tools = ToolsStarted()
    config = tools.watch(config)
    watcher = asyncio.create_task(_watch_abort(services, user_id, run_id, abort, recorder))
    timer = asyncio.create_task(_flush_on_time(recorder))
    try:
        resumed = await resume_waited(config, state, decisions, outputs, recorder)
        if isinstance(resumed, StepOutcome):
            outcome = resumed  # a budget request denied: the run ends with what it has
        else:
            config, state = offloaded(services, agent, config, run, resumed)
            compacted = await compaction_step(services, agent, config, run, state, recorder)
            if isinstance(compacted, StepOutcome):
                outcome = compacted  # the summarizer failed: the step fails (and is retried) as a model call does
            else:
                outcome = await _step_until_abort(config, compacted, recorder, abort, tools)
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
    if outcome.state.pending_budget is not None:  # a limit held the call back: no step was made
        raise_requests(services, run, [budget_record(run, outcome.state, expires_at=None)])  # a sub-agent's
        request_budget_approval(services, run, outcome.state, recorder.snapshot())
        announce_approvals(services, run, outcome.state)
        notify(services.stream_push, run.user_id, run.run_id, recorder.last_seq)
        return _reply(run, "await-approval")
    reply = _persist(services, run, outcome, recorder, approvals)
    return _reply(run, "aborted") if abort.aborted else reply  # interrupted after its tools: saved, then ended


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


async def _step_until_abort(
    config: Any, state: LoopState, recorder: RunRecorder, abort: AbortSignal, tools: ToolsStarted
) -> StepOutcome | None:
    step = asyncio.create_task(run_step(config, state, emit=recorder.emit))
    stop = asyncio.create_task(abort.wait())
    done, _ = await asyncio.wait({step, stop}, return_when=asyncio.FIRST_COMPLETED)
    stop.cancel()
    if step in done or tools.finish_step(abort.reason):  # an interrupt never cuts a tool that started
        return await step
    step.cancel()  # the run was aborted: stop streaming now
    with contextlib.suppress(asyncio.CancelledError):
        await step
    return None


async def _flush_on_time(recorder: RunRecorder) -> None:
    """Write held deltas when their window passes, also while the model is silent."""
    while True:
        due = recorder.tick()
        await asyncio.sleep(recorder.window if due is None else max(due - time.monotonic(), 0.005))


async def _watch_abort(
    services: Services, user_id: str, run_id: str, abort: AbortSignal, recorder: RunRecorder
) -> None:
    """Notice within about a second that the run was aborted, or ended by another writer.

    The API marks an abort in the store; a FailRun or the reconciler ends the run outright. Either
    way the step stops instead of streaming into an ended run. The same read sets the delta window
    by who follows the run now (`stepline.runtime.watchers`).
    """
    while not abort.aborted:
        await asyncio.sleep(ABORT_POLL_SECONDS)
        run = services.store.get_run(user_id, run_id)
        _follow_watchers(recorder, services, run)
        if run.status == "aborted" or run.cancel_reason is not None:  # ended, or asked to stop
            abort.abort(run.cancel_reason or "aborted by the user")
        elif run.status in TERMINAL["run"]:
            abort.abort(f"the run has ended ({run.status})")


def _follow_watchers(recorder: RunRecorder, services: Services, run: RunRecord) -> None:
    """The delta window by who follows the run now; a run nobody follows wakes no stream per append."""
    recorder.window = delta_window_of(services, run)
    recorder.quiet = recorder.window > services.delta_window


def _approvals_recorded(state: LoopState, approvals: list[ApprovalRecord]) -> bool:
    recorded = {a.approval_id for a in approvals}
    return all(approval_id in recorded for approval_id in pending_ids(state))


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


def _persist(
    services: Services, run: RunRecord, outcome: StepOutcome, recorder: RunRecorder, approvals: list[ApprovalRecord]
) -> dict[str, Any]:
    store, now, state = services.store, services.clock(), outcome.state
    snapshot = recorder.snapshot()
    checkpoint_state = state.model_dump(mode="json", by_alias=True)
    step = state.steps[-1]
    fields: dict[str, Any] = {"started_at": now, "ended_at": now}
    if outcome.inspection is not None:
        since = inspection.window_start(step.step_number)
        read = store.list_steps(run.user_id, run.run_id, from_step=since)
        previous = [r for r in read if r.step_index < step.step_number]
        queued = inspection.queued_at(run, previous, approvals)
        inspected = inspection.step_fields(outcome, step.step_number, previous, queued)
        fields.update({k: v for k, v in inspected.items() if v is not None})
    row = StepRecordRow(
        user_id=run.user_id,
        run_id=run.run_id,
        step_index=step.step_number,
        status="completed",
        finish_reason=step.finish_reason,
        usage=cast(dict[str, JsonValue], step.usage.to_metadata()),
        # Stored once: with the inspector's `response`, the tool-call rows and the next step's
        # request hold the step's answer and results (the checkpoint holds them for replay).
        response_messages=[] if "response" in fields else [m.to_wire() for m in step.response_messages],
        provider_metadata=cast(dict[str, JsonValue] | None, step.provider_metadata),
        **fields,
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
    mirror_progress(services, run, snapshot.parts, step_number=step.step_number, kind=outcome.kind)
    if outcome.kind == "await-approval":
        _request_approvals(services, run, state, snapshot)
    elif outcome.kind == "await-client":
        announce_question(services, run, state)
    notify(services.stream_push, run.user_id, run.run_id, recorder.last_seq)  # a wait is a change of status only
    timing = {} if recorder.first_output_ms is None else {"firstOutputMs": recorder.first_output_ms}
    # `watched`: whether anyone followed this step (its window the chat's). The ASL's Route sends a
    # run nobody follows on to the model step function with less memory (`handling.SAME_HANDLER`).
    return _reply(run, outcome.kind, steps=step.step_number + 1, watched=not recorder.quiet, **timing)


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
    raise_requests(services, run, approvals)  # a sub-agent's: into the conversation's message
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


def _reply(run: RunRecord, next_kind: Next, **extra: Any) -> dict[str, Any]:
    return {"userId": run.user_id, "runId": run.run_id, "next": next_kind, **extra}

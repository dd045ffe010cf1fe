"""Forking an ended run from one of its steps: a new run on a new branch, its earlier steps replayed.

`fork_run` finds the fork point (the checkpoint step `n` began from; for a changed approval or
answer, the wait it was given at), checks every edit names something that waited there, builds the
seed (`runtime.fork_seed`) and starts the fork as a turn that branches after the user message the
source answered: one write holds the branch, the run, its replayed log and message, its first
checkpoint and its decided wait. Then the workflow starts; its first step applies the decisions
(an approved tool runs then, once, in the fork's own ledger) and the loop goes on live.

Nothing of the source is written. A fork of a fork reaches back to the run a step came from, so
an earlier step of a fork is forked from the run that made it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import cast

from pydantic import JsonValue

from ..errors import StepLineError
from ..loop.state import LoopState
from ..store.branches import BranchFrom
from ..store.errors import ActiveRunExists, Conflict, NotFound
from ..store.ports import TurnStart, TurnStarted
from ..store.records import TERMINAL, ApprovalRecord, CheckpointRecord, EventRecord, RunRecord
from ..tracing.context import RunTrace
from .fork_seed import ForkEdits, ForkIds, seed_of
from .services import Services

__all__ = ["ForkRefused", "ForkRequest", "fork_origin", "fork_run"]

_DEPTH = 64
"""How many forks back a step is looked for."""


class ForkRefused(StepLineError):
    """A fork that cannot be made; `status` is the HTTP status, the message names the field."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkRequest:
    """Fork at step `step` (None: where the changed decision or answer was given), with `edits`."""

    step: int | None = None
    edits: ForkEdits = field(default_factory=ForkEdits)


def fork_origin(run: RunRecord) -> tuple[str, int] | None:
    """`(run id, step)` a fork was made from (None: the run is no fork)."""
    origin = (run.context or {}).get("fork")
    if not isinstance(origin, dict):
        return None
    found = cast(dict[str, JsonValue], origin)
    run_id, step = found.get("runId"), found.get("step")
    return (run_id, step) if isinstance(run_id, str) and isinstance(step, int) else None


def fork_run(services: Services, user_id: str, run_id: str, request: ForkRequest) -> TurnStarted:
    """Start the fork (see the module docstring); `NotFound` for a run that is not the user's."""
    store = services.store
    run = store.get_run(user_id, run_id)
    if run.status not in TERMINAL["run"]:
        raise ForkRefused(409, f"runId: run {run_id} is {run.status}; a run is forked once it has ended (abort it)")
    if (run.context or {}).get("parent") is not None:
        raise ForkRefused(400, f"runId: run {run_id} is a sub-agent's; fork the run that delegated to it")
    step = _step(services, user_id, run, request)
    owner, checkpoint = _fork_point(services, user_id, run, step)
    state = LoopState.model_validate(checkpoint.state)
    edits = request.edits
    _check_edits(state, edits, step)
    waited = state.pending_approvals or state.pending_client_calls
    if step == len(state.steps) and not waited and _ended(state) and edits.message is None:
        raise ForkRefused(400, f"step: run {run_id} ended after step {step - 1}; fork at an earlier step")
    now = services.clock()
    events = [e for e in store.events_after(user_id, owner.run_id, 0, now=now) if e.seq <= checkpoint.last_event_seq]
    if [e.seq for e in events] != list(range(1, checkpoint.last_event_seq + 1)):
        raise ForkRefused(409, f"step: the stream of run {owner.run_id} before step {step} has expired")
    agent = services.agent_of_run(owner.agent)
    model = services.model_for(agent)
    ids = ForkIds(run_id=f"run-{uuid.uuid4().hex}", message_id=f"msg-{uuid.uuid4().hex}", user_id=user_id, now=now)
    metadata = _metadata(events, ids, model.provider, model.model_id, owner.run_id, step)
    seed = seed_of(
        ids,
        source_run_id=owner.run_id,
        step=step,
        state=state,
        events=events,
        metadata=metadata,
        source_approvals={a.approval_id: a for a in _approvals(services, user_id, state)},
        source_calls={c.tool_call_id: c for c in store.list_tool_calls(user_id, owner.run_id)},
        edits=edits,
        secret=services.approval_secret,
    )
    answered = store.get_message(user_id, owner.conversation_id, owner.assistant_message_id).parent_message_id
    context: dict[str, JsonValue] = {**(owner.context or {}), "fork": {"runId": owner.run_id, "step": step}}
    try:
        started = store.start_turn(
            user_id,
            TurnStart(
                conversation_id=owner.conversation_id,
                run_id=ids.run_id,
                assistant_message_id=ids.message_id,
                user_message=None,
                provider=model.provider,
                model=model.model_id,
                agent=agent.name,
                agent_fingerprint=agent.fingerprint(),
                context=context,
                assistant_metadata=metadata,
                branch=BranchFrom(after=answered),
                trace=RunTrace.new().traceparent,
                seed=seed,
                now=now,
            ),
        )
    except ActiveRunExists as error:
        raise ForkRefused(409, f"runId: {error}; wait for it or abort it before forking") from None
    except Conflict as error:
        raise ForkRefused(409, f"runId: {error} (switch to the run's branch first)") from None
    if services.orchestrator is not None:
        services.orchestrator.start_run(user_id, ids.run_id)
    return started


def _step(services: Services, user_id: str, run: RunRecord, request: ForkRequest) -> int:
    """The fork's first live step: the one given, or the one after the step that asked what is changed."""
    implied: dict[int, str] = {}
    lineage = _lineage(services, user_id, run)
    for approval_id in request.edits.decisions:
        approval = _approval(services, user_id, approval_id)
        asked = None if approval is None else _asked_at(services, user_id, [approval.run_id], approval.tool_call_id)
        if approval is None or approval.run_id not in lineage or asked is None:
            raise ForkRefused(404, f"approvals: approval {approval_id} is not one of run {run.run_id}'s")
        implied[asked + 1] = f"approval {approval_id}"
    for tool_call_id in request.edits.answers:
        asked = _asked_at(services, user_id, lineage, tool_call_id)
        if asked is None:
            raise ForkRefused(404, f"answers: tool call {tool_call_id} is not one of run {run.run_id}'s")
        implied[asked + 1] = f"tool call {tool_call_id}"
    if len(implied) > 1:
        raise ForkRefused(400, "approvals: the changed answers were given at different steps; fork at one of them")
    if request.step is None:
        if not implied:
            raise ForkRefused(400, "step: required (or an approval or an answer to change)")
        return next(iter(implied))
    if request.step < 0:
        raise ForkRefused(400, "step: must be 0 or more")
    if implied and request.step not in implied:
        where = next(iter(implied))
        raise ForkRefused(400, f"step: {implied[where]} was answered before step {where}, not {request.step}")
    return request.step


def _fork_point(services: Services, user_id: str, run: RunRecord, step: int) -> tuple[RunRecord, CheckpointRecord]:
    """The run that made step `step`'s starting state (this one, or a run it was forked from) and that checkpoint."""
    owner = run
    for _ in range(_DEPTH):
        origin = fork_origin(owner)
        if origin is None or step >= origin[1]:
            break
        owner = services.store.get_run(user_id, origin[0])
    checkpoint = services.store.checkpoint_for_step(user_id, owner.run_id, step)
    if checkpoint is None:
        made = len(_final(services, user_id, run).steps)
        raise ForkRefused(400, f"step: run {run.run_id} has no step {step} (it made {made}: 0 to {made - 1})")
    return owner, checkpoint


def _check_edits(state: LoopState, edits: ForkEdits, step: int) -> None:
    waiting = {p.approval_id for p in state.pending_approvals}
    for approval_id in edits.decisions:
        if approval_id not in waiting:
            raise ForkRefused(400, f"approvals: approval {approval_id} did not wait before step {step}")
    asked = {c.tool_call_id for c in state.pending_client_calls}
    for tool_call_id in edits.answers:
        if tool_call_id not in asked:
            raise ForkRefused(400, f"answers: tool call {tool_call_id} is not a question answered before step {step}")


def _ended(state: LoopState) -> bool:
    return bool(state.steps) and state.steps[-1].finish_reason != "tool-calls"


def _final(services: Services, user_id: str, run: RunRecord) -> LoopState:
    checkpoint = services.store.latest_checkpoint(user_id, run.run_id)
    return (
        LoopState.model_validate(checkpoint.state)
        if checkpoint
        else LoopState(run_id=run.run_id, message_id=run.assistant_message_id, started_at=run.started_at, messages=[])
    )


def _lineage(services: Services, user_id: str, run: RunRecord) -> list[str]:
    found, at = [run.run_id], run
    for _ in range(_DEPTH):
        origin = fork_origin(at)
        if origin is None:
            break
        at = services.store.get_run(user_id, origin[0])
        found.append(at.run_id)
    return found


def _asked_at(services: Services, user_id: str, run_ids: list[str], tool_call_id: str) -> int | None:
    """The step whose model call made tool call `tool_call_id`, in the first of the runs that has it."""
    for run_id in run_ids:
        row = next((c for c in services.store.list_tool_calls(user_id, run_id) if c.tool_call_id == tool_call_id), None)
        if row is not None:
            return row.step_index
    return None


def _approvals(services: Services, user_id: str, state: LoopState) -> list[ApprovalRecord]:
    found = (_approval(services, user_id, p.approval_id) for p in state.pending_approvals)
    return [a for a in found if a is not None]


def _approval(services: Services, user_id: str, approval_id: str) -> ApprovalRecord | None:
    try:
        return services.store.get_approval(user_id, approval_id)
    except (NotFound, ValueError):
        return None


def _metadata(
    events: list[EventRecord], ids: ForkIds, provider: str, model: str, source: str, step: int
) -> dict[str, JsonValue]:
    """The source's `start` metadata (its history report), as the fork's, naming where it came from."""
    metadata: dict[str, JsonValue] = {}
    for event in events:
        for chunk in event.chunks:
            if chunk.get("type") == "start" and isinstance(chunk.get("messageMetadata"), dict):
                metadata = dict(cast(dict[str, JsonValue], chunk["messageMetadata"]))
                break
        if metadata:
            break
    metadata.update(
        {
            "schemaVersion": 1,
            "provider": provider,
            "model": model,
            "startedAt": ids.now,
            "runId": ids.run_id,
            "forkedFrom": {"runId": source, "step": step},
        }
    )
    return metadata

"""Starting a turn: the turn's records, its first checkpoint and `start` event, then the workflow.

The run's context (the authorizer's claims, the client's extra body fields) is fixed here, once;
every later step, tool and callback rebuilds it from the run (`run_context_of`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any, cast

from pydantic import JsonValue

from ..agent.definition import Agent
from ..context.tokens import shared_tokens
from ..llm.base import LanguageModel
from ..loop.callbacks import StartEvent
from ..loop.state import LoopState
from ..protocol.chunks import (
    StartChunk,
)
from ..store.branches import BranchFrom
from ..store.errors import NotFound
from ..store.history import turn_history
from ..store.ports import TurnStart, TurnStarted
from ..store.records import (
    RunRecord,
)
from ..tools.context import RunContext
from ..tracing.context import RunTrace
from . import working_runs
from .callbacks import fire
from .ending import fail_run
from .recorder import RunRecorder
from .services import Services
from .stream_push import notifier
from .traces import request_span

__all__ = ["begin_turn", "run_context_of"]

_LOG = logging.getLogger("stepline.runtime")


def begin_turn(
    services: Services,
    user_id: str,
    *,
    conversation_id: str,
    run_id: str,
    assistant_message_id: str,
    user_message: dict[str, Any] | None,
    title: str | None = None,
    branch: BranchFrom | None = None,
    agent: str | None = None,
    claims: Mapping[str, JsonValue] | None = None,
    body: Mapping[str, JsonValue] | None = None,
    unattended: Mapping[str, JsonValue] | None = None,
    dequeue: str | None = None,
    parent: Mapping[str, JsonValue] | None = None,
    admit: bool = False,
) -> TurnStarted:
    """Write the turn, its initial checkpoint and its `start` event, then start the workflow.

    `branch` starts a branch (an edit, a regeneration): the turn follows `branch.after`, and the
    messages after it leave the history (`store.branches`).
    `agent` names the agent of a new conversation (an existing one keeps its own; an unknown name
    raises `UnknownAgentError`); `claims` and `body` become the run's fixed context. `unattended`
    is what a headless start records on the run (`stepline.runtime.headless`); `dequeue` is the
    waiting message (`runtime.inbox`) this turn answers, taken out of the inbox in the same write;
    `parent` links a child run to its parent's tool call (`stepline.runtime.children`).
    `admit`: a turn started from outside, refused with `TooManyRuns` at the cap on working runs
    before anything is written (`stepline.runtime.working_runs`).
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
    run_trace = RunTrace.new()
    if unattended is not None:
        context["unattended"] = dict(unattended)
    if parent is not None:
        context["parent"] = dict(parent)
    turn = TurnStart(
        conversation_id=conversation_id,
        run_id=run_id,
        assistant_message_id=assistant_message_id,
        user_message=user_message,
        trigger="automation" if unattended is not None else "web",
        provider=model.provider,
        model=model.model_id,
        agent=chosen.name,
        agent_fingerprint=chosen.fingerprint(),
        context=context,
        title=title,
        assistant_metadata=metadata,
        branch=branch,
        trace=run_trace.traceparent,
        dequeue=dequeue,
        now=now,
    )
    taken = working_runs.admit(services, user_id, claims, run_id) if admit else []
    try:
        started = store.start_turn(user_id, turn)
    except BaseException:  # nothing was written: the leases go back at once
        working_runs.give_back(services, taken, run_id)
        raise
    with request_span(services, "stepline.start_run", started.run, _start_attributes(chosen, unattended)):
        _prepare_run(services, started, chosen, model, metadata)
    return started


def _start_attributes(chosen: Agent, unattended: Mapping[str, JsonValue] | None) -> dict[str, str | None]:
    """The start span's attributes: the agent, and what started the run.

    `web` for a chat message; for a schedule its name and the occurrence's time, for a hook its
    name; never the run's input or metadata.
    """
    if unattended is None:
        return {"gen_ai.agent.name": chosen.name, "stepline.trigger": "web"}
    trigger = unattended.get("trigger")
    metadata = unattended.get("metadata")
    given = cast(dict[str, JsonValue], metadata) if isinstance(metadata, dict) else {}
    attributes = {"gen_ai.agent.name": chosen.name, "stepline.trigger": _text(trigger)}
    if trigger == "schedule":  # the names fire_occurrence set: the schedule and its occurrence's time
        attributes["stepline.schedule.name"] = _text(given.get("schedule"))
        attributes["stepline.schedule.scheduled_at"] = _text(given.get("scheduledAt"))
    elif trigger == "hook":
        attributes["stepline.hook.name"] = _text(given.get("hook"))
    return attributes


def _text(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None


def _prepare_run(
    services: Services, started: TurnStarted, chosen: Agent, model: LanguageModel, metadata: dict[str, Any]
) -> None:
    """The run's first checkpoint and `start` event, its `on_start`, then its workflow."""
    store, user_id, run_id, now = services.store, started.run.user_id, started.run.run_id, started.run.started_at
    conversation_id, assistant_message_id = started.run.conversation_id, started.run.assistant_message_id
    earlier = [
        m
        for m in store.list_messages(user_id, conversation_id, limit=10_000).items
        if m.message_id != assistant_message_id and m.superseded_by is None
    ]
    history = turn_history(
        earlier,
        budget_tokens=chosen.context.history_budget(model.model_id),
        tokens=shared_tokens(),
        reasoning=chosen.reasoning_history,
        model_supports_reasoning=model.capabilities.reasoning_history,
    )
    metadata["context"] = {"history": history.report.to_metadata()}
    state = LoopState(run_id=run_id, message_id=assistant_message_id, started_at=now, messages=history.messages)
    store.save_checkpoint(
        user_id, run_id, state=state.model_dump(mode="json", by_alias=True), reason="step_end", now=now
    )
    recorder = RunRecorder(
        store,
        started.run,
        started.assistant_message,
        now=services.clock,
        notify=notifier(services.stream_push, started.run.user_id, started.run.run_id),
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
        return
    if services.orchestrator is not None:
        services.orchestrator.start_run(user_id, run_id)


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

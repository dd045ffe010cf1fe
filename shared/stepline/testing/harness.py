"""Run an agent's turn through the durable path, in memory: what a deployment does, in a test.

    result = run_turn(agent, "write a note", model=scripted_model([...]), approve=True)
    assert result.text == "Done." and result.tool("write_note").output == {...}

The harness is the state machine of stepline/stack/statemachine/agent_run.asl.json driven by hand over the
real worker handlers (`stepline.runtime.handlers`): BeginTurn (what the API function does), then
ModelStep until its `next` is not `continue`; AwaitInput on `await-approval`/`await-client`, where
the approval decisions and question answers given to the harness are made through the same worker
calls as the approval webhook and the chat endpoint (`decide`, `answer`), and the run goes on only
when the wait was resumed, as Step Functions requires; a retryable model failure is retried as the
ASL's `Retry` does; FinalizeRun or FailRun end it. The store is `MemoryStore`, the blobs
`MemoryBlobStore`.

Every function invocation is another "process": the harness builds new `Services`, and from the
agent factory (or the `module:attribute` reference) a new agent, for each, so what a test sees is
what survives between Lambdas: the run context is the one stored with the run, and state is what
the store holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from pydantic import JsonValue

from ..agent.definition import Agent
from ..agent.delegation import AgentTool
from ..agent.loading import AgentSet, load_agents
from ..errors import StepLineError
from ..llm.base import LanguageModel
from ..protocol._json import dumps
from ..protocol.chunks import parse_chunk
from ..protocol.reducer import reduce_ui_message_stream
from ..runtime import ending, turn, waits
from ..runtime.child_results import child_run_id
from ..runtime.handlers import handlers
from ..runtime.handling import Handler, TransientModelError
from ..runtime.services import Services
from ..store.blobs import MemoryBlobStore
from ..store.errors import ActiveRunExists, ConcurrentUpdate, NotFound
from ..store.memory import MemoryStore
from ..store.records import TERMINAL, WAITING_RUN, ApprovalRecord, RunRecord
from ..store.replay import chunks_of
from .engine import LambdaContext, RecordingOrchestrator
from .result import ToolExecution, TurnResult

__all__ = ["Answer", "Approve", "Harness", "HarnessError", "run_turn", "run_turn_async"]

AgentSource = Agent | AgentSet | Mapping[str, Agent] | str | Callable[[], "Agent | AgentSet | Mapping[str, Agent]"]
"""An agent, a mapping `name -> Agent`, a `module:attribute` reference, or a factory of them."""
Decision = bool | tuple[bool, str | None]
"""Approve (True), deny (False), or deny with a reason (`(False, "not this file")`)."""
Approve = Decision | Mapping[str, Decision] | Callable[[ApprovalRecord], "Decision | None"] | None
"""Every approval, per tool name, or a function of the request (None leaves it waiting)."""
Answer = Mapping[str, JsonValue] | Callable[[ToolExecution], JsonValue] | None
"""The output of each question (client-side tool call), per tool name or as a function of the call."""

_ASL_RETRIES = 3  # the ASL's Retry on TransientModelError and ConcurrentUpdate: MaxAttempts 3 after the first


class HarnessError(StepLineError, AssertionError):
    """The durable path did something a deployment would get stuck on (a wait never resumed)."""


@dataclass
class Harness:
    """One user's conversations with an agent, over a store that outlives every "process".

    Attributes:
        agent: The agent (or agents) to run; a factory or a reference is called anew per process.
        model: The model every agent runs with instead of its own (a mapping: per agent name; an
            agent it does not name keeps its own).
        user_id: The user the turns belong to.
        claims: The caller's identity claims (default `{"sub": user_id}`).
        store: The durable store (kept across turns and processes).
        blobs: Workspace files and artifacts.
        clock: Milliseconds since the epoch (a test may fix it).
        admin: Decide as an admin may: also budget requests of user and tenant limits.
    """

    agent: AgentSource
    model: LanguageModel | Mapping[str, LanguageModel] | None = None
    user_id: str = "test-user"
    claims: Mapping[str, JsonValue] | None = None
    store: MemoryStore = field(default_factory=MemoryStore)
    blobs: MemoryBlobStore = field(default_factory=MemoryBlobStore)
    clock: Callable[[], int] | None = None
    admin: bool = False
    orchestrator: RecordingOrchestrator = field(default_factory=RecordingOrchestrator, init=False)
    _ids: itertools.count[int] = field(default_factory=itertools.count, init=False)
    _seen_starts: int = field(default=0, init=False)

    # -- processes ---------------------------------------------------------------------------------

    def services(self) -> Services:
        """The services of a new process: a new agent set over the same store and blobs."""
        extra: dict[str, Any] = {"clock": self.clock} if self.clock is not None else {}
        return Services(
            store=self.store, blobs=self.blobs, agents=self._agents(), orchestrator=self.orchestrator, **extra
        )

    def _agents(self) -> AgentSet:
        source: Any = self.agent
        if isinstance(source, str):
            agents = load_agents(source)
        else:
            if callable(source) and not isinstance(source, Agent | AgentSet | Mapping):
                source = source()
            if isinstance(source, Agent):
                agents = AgentSet.single(source)
            elif isinstance(source, AgentSet):
                agents = source
            else:
                agents = _agent_set(cast(Mapping[str, Agent], source))
        if self.model is None:
            return agents
        models: Mapping[str, LanguageModel] = (
            self.model if isinstance(self.model, Mapping) else {name: self.model for name, _ in agents}
        )
        return AgentSet({name: _with_models(agent, models) for name, agent in agents}, agents.reference)

    def _handlers(self) -> dict[str, Handler]:
        return handlers(self.services)

    # -- turns ---------------------------------------------------------------------------------------

    def turn(
        self,
        prompt: str | Mapping[str, Any],
        *,
        conversation_id: str | None = None,
        agent: str | None = None,
        body: Mapping[str, JsonValue] | None = None,
        approve: Approve = None,
        answer: Answer = None,
    ) -> TurnResult:
        """Send a user message (text, or a UIMessage dict) and run the turn as far as it goes.

        The turn ends completed, failed or aborted, or waiting when an approval or question was
        left undecided (`approve`/`answer` gave nothing for it): `resume` goes on from there. A
        new turn in a conversation whose run waits aborts that run first (`new_user_message`), as
        the chat endpoint does.
        """
        n = next(self._ids)
        conversation = conversation_id or f"conversation-{uuid.uuid4().hex[:12]}"
        run_id = f"run-{uuid.uuid4().hex[:12]}"
        message = (
            {"id": f"user-{n}", "role": "user", "parts": [{"type": "text", "text": prompt}]}
            if isinstance(prompt, str)
            else dict(prompt)
        )
        invocations = ["BeginTurn"]
        begin: dict[str, Any] = {
            "conversation_id": conversation,
            "run_id": run_id,
            "assistant_message_id": f"assistant-{run_id}",
            "user_message": message,
            "agent": agent,
            "claims": dict(self.claims) if self.claims is not None else None,
            "body": body,
        }
        try:
            turn.begin_turn(self.services(), self.user_id, **begin)
        except ActiveRunExists:  # as the chat endpoint does: a run left waiting is closed, the user moved on
            active = self.run(self.store.get_conversation(self.user_id, conversation).active_run_id or "")
            if active.status not in WAITING_RUN:
                raise
            ending.abort_run(self.services(), self.user_id, active.run_id, reason="new_user_message")
            turn.begin_turn(self.services(), self.user_id, **begin)
        if run_id not in self.orchestrator.started:  # on_start failed: the run ended in BeginTurn
            return self._result(run_id, invocations)
        self._seen_starts = len(self.orchestrator.started)
        return self._drive(run_id, invocations, approve, answer)

    def resume(self, run_id: str, *, approve: Approve = None, answer: Answer = None) -> TurnResult:
        """Decide or answer what a waiting run waits for, and run it on (days later, as it were)."""
        return self._drive(run_id, [], approve, answer, waiting=True)

    def abort(self, run_id: str, *, reason: str = "user_cancelled") -> TurnResult:
        """Stop a run on purpose, as `POST /api/runs/{runId}/abort` does (its `on_abort` fires once)."""
        ending.abort_run(self.services(), self.user_id, run_id, reason=reason)
        return self._result(run_id, ["AbortRun"])

    def _drive(
        self, run_id: str, invocations: list[str], approve: Approve, answer: Answer, *, waiting: bool = False
    ) -> TurnResult:
        event: dict[str, Any] = {"userId": self.user_id, "runId": run_id, "firstStep": 0}
        retries = 0
        while True:
            if waiting:
                token = f"token-{run_id}-{len(invocations)}"
                if not self._await(event, token, invocations, approve, answer):
                    return self._result(run_id, invocations)
                waiting = False
            invocations.append("ModelStep")
            try:
                result = self._handlers()["stepline-model-step"](event, LambdaContext(uuid.uuid4().hex))
            except Exception as error:
                if isinstance(error, TransientModelError | ConcurrentUpdate) and retries < _ASL_RETRIES:
                    retries += 1
                    continue
                cause = dumps({"errorMessage": str(error), "errorType": type(error).__name__})
                self._fail(event | {"input": {"error": {"Error": type(error).__name__, "Cause": cause}}}, invocations)
                return self._result(run_id, invocations)
            retries = 0
            kind = result["next"]
            if kind == "continue-as-new":  # a new execution from the step cursor (ContinueAsNew)
                event["firstStep"] = result["steps"]
                kind = "continue"
            if kind == "continue":
                continue
            if kind in ("await-approval", "await-client"):
                waiting = True
                continue
            if kind in ("finished", "aborted"):
                invocations.append("FinalizeRun")
                self._handlers()["stepline-finalize-run"](event, LambdaContext(uuid.uuid4().hex))
            else:
                self._fail(event | {"input": {**event, "step": {"next": kind, "detail": result}}}, invocations)
            return self._result(run_id, invocations)

    def _fail(self, event: dict[str, Any], invocations: list[str]) -> None:
        invocations.append("FailRun")
        self._handlers()["stepline-fail-run"](event, LambdaContext(uuid.uuid4().hex))

    def _await(
        self, event: dict[str, Any], token: str, invocations: list[str], approve: Approve, answer: Answer
    ) -> bool:
        """AwaitInput, then the decisions given: True when the wait was resumed (the run goes on)."""
        invocations.append("AwaitInput")
        self._handlers()["stepline-await-input"](event | {"taskToken": token}, LambdaContext(uuid.uuid4().hex))
        self._drive_children(approve, answer)
        if token in self.orchestrator.resumed:
            return True
        run_id = str(event["runId"])
        undecided = self._decide(run_id, approve) | self._answer(run_id, answer)
        if token in self.orchestrator.resumed:
            return True
        if not undecided:
            raise HarnessError(f"run {run_id}: everything it waited for was given, but its wait was never resumed")
        return False

    def _drive_children(self, approve: Approve, answer: Answer) -> None:
        """Drive the runs AwaitInput started (sub-agents' child runs), each to its end or its wait."""
        while self._seen_starts < len(self.orchestrator.started):
            child = self.orchestrator.started[self._seen_starts]
            self._seen_starts += 1
            status = self.run(child).status
            if status not in TERMINAL["run"]:
                self._drive(child, [], approve, answer, waiting=status in WAITING_RUN)

    def _decide(self, run_id: str, approve: Approve) -> bool:
        """Decide the run's requested approvals (as the webhook does); True when one is left undecided."""
        undecided = False
        for approval in self.pending_approvals(run_id):
            decision = _decision_for(approval, approve)
            if decision is None:
                undecided = True
                continue
            approved, reason = decision if isinstance(decision, tuple) else (decision, None)
            waits.decide(
                self.services(), self.user_id, approval.approval_id, approved=approved, reason=reason, admin=self.admin
            )
        return undecided

    def _answer(self, run_id: str, answer: Answer) -> bool:
        """Answer the run's open questions (as the chat endpoint does); True when one is left open."""
        services = self.services()
        open_calls = waits.run_state(services, self.user_id, run_id).pending_client_calls
        rows = {r.tool_call_id: r for r in self.store.list_tool_calls(self.user_id, run_id)}
        unanswered = False
        for pending in open_calls:
            row = rows.get(pending.tool_call_id)
            if row is not None and row.status in ("success", "error", "denied", "expired"):
                continue
            with contextlib.suppress(NotFound):  # a sub-agent's call: its child run answers it
                self.run(child_run_id(run_id, pending.tool_call_id))
                unanswered = True
                continue
            execution = ToolExecution(pending.tool_call_id, pending.tool_name, pending.input, "pending", None, None)
            if callable(answer):
                output = answer(execution)
            elif answer is not None and pending.tool_name in answer:
                output = answer[pending.tool_name]
            else:
                unanswered = True
                continue
            waits.answer(services, self.user_id, run_id, pending.tool_call_id, output=output, error_text=None)
        return unanswered

    # -- reading a run ----------------------------------------------------------------------------------

    def pending_approvals(self, run_id: str) -> list[ApprovalRecord]:
        """The run's approval requests nobody has decided yet."""
        return [a for a in self.store.pending_approvals(self.user_id) if a.run_id == run_id]

    def run(self, run_id: str) -> RunRecord:
        return self.store.get_run(self.user_id, run_id)

    def _result(self, run_id: str, invocations: Sequence[str]) -> TurnResult:
        run = self.run(run_id)
        events = self.store.events_after(self.user_id, run_id, 0, now=self.services().clock())
        chunks = [dict(c) for c in chunks_of(events)]
        reduced = reduce_ui_message_stream([parse_chunk(c) for c in chunks])
        stored = self.store.get_message(self.user_id, run.conversation_id, run.assistant_message_id)
        executions = [
            ToolExecution(
                r.tool_call_id,
                r.tool_name,
                r.input,
                r.status,
                r.output,
                str(r.error.get("message")) if r.error else None,
            )
            for r in sorted(self.store.list_tool_calls(self.user_id, run_id), key=lambda r: r.step_index)
        ]
        return TurnResult(
            run=run,
            message=reduced.message or {},
            stored_message={
                "id": stored.message_id,
                "role": stored.role,
                "parts": stored.parts,
                **({"metadata": stored.metadata} if stored.metadata is not None else {}),
            },
            chunks=chunks,
            tool_calls=executions,
            pending_approvals=self.pending_approvals(run_id),
            invocations=list(invocations),
            stream_errors=list(reduced.errors),
        )


def _with(agent: Agent, **changes: Any) -> Agent:
    """The agent with other settings, validated and fingerprinted as a definition of its own."""
    fields = {name: getattr(agent, name) for name in type(agent).model_fields}
    return Agent(**(fields | changes))


def _with_models(agent: Agent, models: Mapping[str, LanguageModel]) -> Agent:
    """The agent with its model from `models` (by name), and so its sub-agents (`as_tool`), at any depth."""
    tools: tuple[Any, ...] = agent.tools if isinstance(agent.tools, tuple) else ()
    if any(isinstance(t, AgentTool) for t in tools):
        tools = tuple(replace(t, agent=_with_models(t.agent, models)) if isinstance(t, AgentTool) else t for t in tools)
        agent = _with(agent, tools=list(tools))
    return _with(agent, model=models[agent.name]) if agent.name in models else agent


def _agent_set(mapping: Mapping[str, Agent]) -> AgentSet:
    """A mapping as `STEPLINE_AGENT` reads one: an unnamed agent takes its key as its name."""
    agents: dict[str, Agent] = {}
    for key, agent in mapping.items():
        if agent.name not in (key, "agent"):
            raise HarnessError(f"entry {key!r} holds the agent named {agent.name!r}; use one name")
        agents[key] = agent if agent.name == key else _with(agent, name=key)
    return AgentSet(agents)


def _decision_for(approval: ApprovalRecord, approve: Approve) -> Decision | None:
    if approve is None or isinstance(approve, bool):
        return approve
    if isinstance(approve, tuple):
        return cast(Decision, approve)
    if isinstance(approve, Mapping):
        return cast(Mapping[str, Decision], approve).get(approval.tool_name)
    return approve(approval)


def run_turn(
    agent: AgentSource,
    prompt: str | Mapping[str, Any],
    *,
    model: LanguageModel | Mapping[str, LanguageModel] | None = None,
    approve: Approve = None,
    answer: Answer = None,
    claims: Mapping[str, JsonValue] | None = None,
    body: Mapping[str, JsonValue] | None = None,
    agent_name: str | None = None,
    user_id: str = "test-user",
) -> TurnResult:
    """One turn of a new conversation through the durable path in memory (see `Harness`)."""
    harness = Harness(agent, model=model, user_id=user_id, claims=claims)
    return harness.turn(prompt, agent=agent_name, body=body, approve=approve, answer=answer)


async def run_turn_async(agent: AgentSource, prompt: str | Mapping[str, Any], **options: Any) -> TurnResult:
    """`run_turn` from async code (a pytest-asyncio test): the functions run in a worker thread.

    Each worker function runs its own event loop, as a Lambda does, so it cannot share the caller's.
    """
    return await asyncio.to_thread(run_turn, agent, prompt, **options)

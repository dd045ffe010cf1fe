"""What a `POST /api/chat` does before it streams: start a turn, or route the answers it carries.

The server's stored conversation is the authority; of the posted messages only the new user
message (a new reply) or the answers in the continued assistant message are used. Posted history
is never written back, so a client cannot rewrite what the model saw.

- **New reply** (`submit-message` ending with a user message): a new run (`begin_turn`), streamed
  from its first event. A POST repeated for the same user message while its run is active streams
  that run again instead of failing (a client retrying after a dropped connection).
- **Continuation** (`submit-message` ending with the assistant message of a waiting run, what
  `addToolApprovalResponse` / `addToolOutput` with `sendAutomaticallyWhen` send): each
  `approval-responded` part goes through the webhook's compare-and-set (`decide`) — also a
  sub-agent's approval raised into the message (`runtime.child_approvals`), decided on its own run —, each output of
  a question the run waits for through `answer`; then the stream starts with that message's id and
  carries only what the client does not have yet (after the step that asked).
- **Edit** (`submit-message` whose `messageId` names a stored user message) and **regenerate**
  (of the last answer or any earlier one): a new run on a new branch (`api.branching`); the
  messages after the branching point stay, on the branch they were on.

Errors are `ApiError`s with the HTTP status and a message that names what was wrong.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import JsonValue

from ..agent.delegation import agent_tools_of
from ..agent.loading import UnknownAgentError
from ..protocol._json import dumps
from ..protocol.parts import UIMessage
from ..protocol.request import ChatRequest, message_to_wire, plan_turn
from ..runtime.child_results import parent_of
from ..runtime.ending import abort_run
from ..runtime.inbox import start_next
from ..runtime.services import Services
from ..runtime.turn import begin_turn
from ..runtime.waits import answer, decide, run_state
from ..runtime.watchers import noter
from ..store.branches import BranchFrom
from ..store.errors import ActiveRunExists, Conflict, DecisionConflict, Gone, NotFound
from ..store.records import TERMINAL, WAITING_RUN, MessageRecord, RunRecord, check_id
from ..store.replay import WHOLE_EVENT, EventPosition
from .branching import edit_point, regenerate_point
from .errors import ApiError
from .new_message import RunEnded, describe, policy_of, queue_edit, while_working
from .tail import wait_position

__all__ = ["Caller", "ChatStream", "latest_run_id", "open_chat"]

MOVED_ON = "new_user_message"
"""The abort reason of a waiting run the user left unanswered by sending a new message."""
_LEVELS = 16
"""How far up a continuation looks for the message's run from an approval's (sub-agent levels)."""
SETTLE_SECONDS = 10.0
"""How long a continuation waits for the run to reach its wait (the client can see a request a
moment before the step that made it is saved)."""


@dataclass(frozen=True, slots=True)
class ChatStream:
    """Which run a chat response streams, from where, and what goes before the tail."""

    run_id: str
    after: EventPosition | None = None
    prelude: list[str] = field(default_factory=list[str])
    input_grace: float = 0.0
    """See `TailOptions.input_grace_seconds` (a continuation's run still reads waiting for a moment)."""
    queued: str | None = None
    """The waiting message (its id) whose run `run_id` has not started yet: the stream starts with it."""
    conversation_id: str = ""


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who starts a turn and with what: the run context a new run fixes (`RunContext`)."""

    claims: dict[str, JsonValue] = field(default_factory=dict[str, JsonValue])
    body: dict[str, JsonValue] = field(default_factory=dict[str, JsonValue])
    """The request's `extra_body`: what `DefaultChatTransport`'s `body` option sends."""

    @property
    def agent(self) -> str | None:
        """The agent a new chat asks for (`body.agent`); an existing chat keeps its own."""
        name = self.body.get("agent")
        if name is None or isinstance(name, str):
            return name
        raise ApiError(400, "agent: must be the name of an agent (a string)")


def open_chat(services: Services, user_id: str, request: ChatRequest, caller: Caller | None = None) -> ChatStream:
    """Start or continue the turn a chat request asks for (see the module docstring)."""
    try:
        conversation_id = check_id(request.id, "chat id")
    except ValueError as error:
        raise ApiError(400, f"id: {error}") from None
    caller = caller or Caller(body=dict(request.extra_body))
    try:
        if request.trigger == "regenerate-message":
            stored = _stored_messages(services, user_id, conversation_id)
            plan = plan_turn(request, known_message_ids={m.message_id for m in stored})
            last = plan.history[-1] if plan.history and plan.history[-1].role == "user" else None
            point = regenerate_point(stored, replaced=plan.replaced_message_id, last_posted=last.id if last else None)
            return _branch(services, user_id, conversation_id, None, point, caller)
        plan = plan_turn(request)
        if plan.kind == "continuation":
            return _continue(services, user_id, conversation_id, request.messages[-1])
        message = request.messages[-1]
        if request.message_id is not None and message.role == "user":
            stored = _stored_messages(services, user_id, conversation_id)
            if any(m.message_id == message.id for m in stored):  # `sendMessage({ text, messageId })`: an edit
                point = edit_point(stored, message.id)
                return _branch(services, user_id, conversation_id, message, point, caller)
        return _new_reply(services, user_id, conversation_id, message, caller)
    except UnknownAgentError as error:
        raise ApiError(400, str(error)) from None


def _new_reply(
    services: Services, user_id: str, conversation_id: str, message: UIMessage, caller: Caller
) -> ChatStream:
    """A new run for a new user message, or what the new-message policy does with it.

    A run still waiting for the user (an approval, a question) is closed first: the user moved on
    without answering (the old turn stays incomplete), and its pending approvals expire.
    A run that is working meets the policy (`api.new_message`).
    """
    if message.role != "user":
        raise ApiError(400, "messages: the last message of a new reply must be a user message")
    policy = policy_of(services, user_id, conversation_id, caller.body)
    waiting = _waiting(services, user_id, conversation_id, message.id)
    if waiting is not None:
        return waiting
    for _ in range(3):
        try:
            return _start_reply(services, user_id, conversation_id, message, caller)
        except ActiveRunExists:
            active = _active_run(services, user_id, conversation_id)
        if active is None:
            continue  # ended meanwhile
        if active.request_message_id == message.id:
            return ChatStream(run_id=active.run_id)  # the same POST again: stream that run
        if active.status in WAITING_RUN:
            abort_run(services, user_id, active.run_id, reason=MOVED_ON)
            start_next(services, user_id, conversation_id)  # messages that waited behind it come first
            continue
        context: dict[str, JsonValue] = {"claims": dict(caller.claims or {"sub": user_id}), "body": dict(caller.body)}
        try:
            run_id, queued, prelude, after = while_working(
                services, user_id, conversation_id, message, active, policy, context
            )
        except RunEnded:
            continue
        return ChatStream(run_id=run_id, after=after, prelude=prelude, queued=queued, conversation_id=conversation_id)
    raise ApiError(409, "the chat's runs kept changing; send the message again")


def _waiting(services: Services, user_id: str, conversation_id: str, message_id: str) -> ChatStream | None:
    """The same POST again for a message that waits in the inbox: its stream again."""
    try:
        inbox = services.store.get_conversation(user_id, conversation_id).inbox
    except NotFound:
        return None
    entry = next((e for e in inbox if e.message_id == message_id), None)
    if entry is None:
        return None
    if entry.mode == "steer":
        return ChatStream(run_id=entry.run_id)
    return ChatStream(run_id=entry.run_id, queued=entry.message_id, conversation_id=conversation_id)


def _begin(
    services: Services,
    user_id: str,
    conversation_id: str,
    *,
    user_message: dict[str, Any] | None,
    caller: Caller,
    branch: BranchFrom | None = None,
) -> ChatStream:
    started = begin_turn(
        services,
        user_id,
        conversation_id=conversation_id,
        run_id=new_id("run"),
        assistant_message_id=new_id("msg"),
        user_message=user_message,
        branch=branch,
        agent=caller.agent,
        claims=caller.claims or None,
        body=caller.body,
        admit=True,
    )
    return ChatStream(run_id=started.run.run_id)


def _start_reply(
    services: Services, user_id: str, conversation_id: str, message: UIMessage, caller: Caller
) -> ChatStream:
    try:
        return _begin(services, user_id, conversation_id, user_message=message_to_wire(message), caller=caller)
    except ActiveRunExists:
        raise
    except Conflict as error:
        raise ApiError(
            409,
            f"messages: message id {message.id} is already in this chat"
            " (to edit it, send it with messageId, as sendMessage({ text, messageId }) does)",
        ) from error


def latest_run_id(messages: list[MessageRecord]) -> str | None:
    """The run of the chat's newest assistant message."""
    return next(
        (m.run_id for m in reversed(messages) if m.role == "assistant" and m.run_id and m.superseded_by is None), None
    )


def _stored_messages(services: Services, user_id: str, conversation_id: str) -> list[MessageRecord]:
    """Every stored message of the chat, on every branch (none for a chat that does not exist)."""
    try:
        return services.store.list_messages(user_id, conversation_id, limit=10_000).items
    except NotFound:
        return []


def _branch(
    services: Services,
    user_id: str,
    conversation_id: str,
    edited: UIMessage | None,
    point: BranchFrom,
    caller: Caller,
) -> ChatStream:
    """A new run on a new branch: the edited user message (a new stored message), or a new answer.

    A run waiting for the user is closed first, as a new message closes it. A run at work: a
    regeneration, or an edit under `reject`, is a 409; an edit under `queue` / `interrupt` waits in
    the inbox (`api.new_message.queue_edit`; `interrupt` also asks the run to stop, in the same write). Two edits
    racing: the first to start its run wins, the other meets it here.
    """
    wire = None if edited is None else {**message_to_wire(edited), "id": new_id("msg")}
    for _ in range(3):
        try:
            return _begin(services, user_id, conversation_id, user_message=wire, caller=caller, branch=point)
        except ActiveRunExists:
            active = _active_run(services, user_id, conversation_id)
        except Conflict as error:  # `point` left the active branch meanwhile (a switch or another branch)
            raise ApiError(409, f"messageId: {error}") from None
        if active is not None and active.status in WAITING_RUN:
            abort_run(services, user_id, active.run_id, reason=MOVED_ON)
            start_next(services, user_id, conversation_id)
            continue
        if active is None:
            continue
        if edited is None or wire is None or policy_of(services, user_id, conversation_id, caller.body) == "reject":
            raise ApiError(409, f"{describe(active)}: wait for it or abort it before editing or regenerating")
        context: dict[str, JsonValue] = {"claims": dict(caller.claims or {"sub": user_id}), "body": dict(caller.body)}
        policy = policy_of(services, user_id, conversation_id, caller.body)
        queued = queue_edit(services, user_id, conversation_id, (edited, wire), point, active, policy, context)
        if queued is not None:
            return ChatStream(run_id=queued[0], queued=queued[1], conversation_id=conversation_id)
    raise ApiError(409, "the chat's runs kept changing; send the message again")


def _active_run(services: Services, user_id: str, conversation_id: str) -> RunRecord | None:
    try:
        conversation = services.store.get_conversation(user_id, conversation_id)
        active = conversation.active_run_id
        return None if active is None else services.store.get_run(user_id, active)
    except NotFound:
        return None


# -- continuation ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Answers:
    decisions: list[tuple[str, bool, str | None]]
    outputs: list[tuple[str, Any, str | None]]


def _answers(message: UIMessage) -> _Answers:
    decisions: list[tuple[str, bool, str | None]] = []
    outputs: list[tuple[str, Any, str | None]] = []
    for part in message_to_wire(message)["parts"]:
        part = cast(dict[str, Any], part)
        kind = str(part.get("type", ""))
        if not (kind.startswith("tool-") or kind == "dynamic-tool"):
            continue
        approval = cast(dict[str, Any], part.get("approval") or {})
        if part.get("state") == "approval-responded" and isinstance(approval.get("approved"), bool):
            decisions.append((str(approval["id"]), approval["approved"], approval.get("reason")))
        elif part.get("state") == "output-available":
            outputs.append((str(part["toolCallId"]), part.get("output"), None))
        elif part.get("state") == "output-error":
            outputs.append((str(part["toolCallId"]), None, str(part.get("errorText") or "error")))
    return _Answers(decisions, outputs)


def _continue(services: Services, user_id: str, conversation_id: str, message: UIMessage) -> ChatStream:
    store = services.store
    try:
        stored = store.get_message(user_id, conversation_id, message.id)
    except NotFound:
        raise ApiError(404, f"messageId: no message {message.id} in this chat") from None
    if stored.role != "assistant" or stored.run_id is None:
        raise ApiError(400, f"messageId: message {message.id} is not an assistant reply")
    run = _settled(services, user_id, stored.run_id)
    asked = _questions(services, user_id, run)
    answers = _answers(message)
    outputs = [o for o in answers.outputs if o[0] in asked]
    if not answers.decisions and not outputs:
        if run.status not in TERMINAL["run"] and run.status not in WAITING_RUN:
            now = (run.last_event_seq, WHOLE_EVENT)  # a run at work: the client has what it wrote so far
            return ChatStream(run_id=run.run_id, after=now, prelude=[_start(stored)])
        raise ApiError(400, f"messages: message {message.id} carries no approval response or tool output to continue")
    if (note := noter(services, user_id, run.run_id)) is not None:  # its stream follows: before the run goes on
        note()
    for approval_id, approved, reason in answers.decisions:
        _decide(services, user_id, run, approval_id, approved, reason)
    for tool_call_id, output, error_text in outputs:
        try:
            answer(services, user_id, run.run_id, tool_call_id, output=output, error_text=error_text)
        except Conflict:
            raise ApiError(409, f"tool call {tool_call_id} was already answered differently") from None
    events = store.events_after(user_id, run.run_id, 0, now=services.clock())
    after = wait_position(events, approval_ids={d[0] for d in answers.decisions}, tool_call_ids={o[0] for o in outputs})
    return ChatStream(run_id=run.run_id, after=after, prelude=[_start(stored)], input_grace=SETTLE_SECONDS)


def _settled(services: Services, user_id: str, run_id: str) -> RunRecord:
    """The run once it waits or has ended (a request can be answered just before the step is saved)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        run = services.store.get_run(user_id, run_id)
        if run.status in WAITING_RUN or run.status in TERMINAL["run"] or time.monotonic() > deadline:
            return run
        time.sleep(0.05)


def _questions(services: Services, user_id: str, run: RunRecord) -> set[str]:
    """The tool calls the run waits for the client to answer (only those: a sub-agent's child run answers its own)."""
    delegated = agent_tools_of(services.agent_of_run(run.agent))
    calls = run_state(services, user_id, run.run_id).pending_client_calls
    return {call.tool_call_id for call in calls if call.tool_name not in delegated}


def _decide(
    services: Services, user_id: str, run: RunRecord, approval_id: str, approved: bool, reason: str | None
) -> None:
    try:
        approval = services.store.get_approval(user_id, approval_id)
        if not _within(services, user_id, approval.run_id, run.run_id):
            raise NotFound(approval_id)
        decide(services, user_id, approval_id, approved=approved, reason=reason)
    except NotFound:
        raise ApiError(404, f"approval {approval_id} is not one of this message's requests") from None
    except DecisionConflict:
        raise ApiError(409, f"approval {approval_id} was already decided the other way") from None
    except Gone:
        pass  # expired: the run already went on with a denial, which the stream shows


def _within(services: Services, user_id: str, run_id: str, top: str) -> bool:
    """Whether `run_id` is the run `top` or a sub-agent run below it (its approvals are the message's too)."""
    for _ in range(_LEVELS):
        if run_id == top:
            return True
        parent = parent_of(services.store.get_run(user_id, run_id))
        if parent is None:
            return False
        run_id = str(parent["runId"])
    return False


def _start(message: MessageRecord) -> str:
    chunk: dict[str, Any] = {"type": "start", "messageId": message.message_id}
    if message.metadata:
        chunk["messageMetadata"] = message.metadata
    return f"data: {dumps(chunk)}\n\n"

"""A new user message while a run of the conversation works: the agent's `on_new_message` policy.

The policy is the agent's (`Agent.on_new_message`), or the request's body field `onNewMessage`
(what `DefaultChatTransport`'s `body` option, or `sendMessage(message, {body})`, sends):

- `reject`: a 409 saying which run works and on which message;
- `queue`: the message waits (`runtime.inbox`); the response streams its run from its start,
  once the current run has ended;
- `interrupt`: the message is queued first and the current run is asked to stop at its next safe
  point (`runtime.safe_point`), in one write; the response streams its run once the current one
  has stopped;
- `steer`: the message is handed to the running loop for its next step boundary; the response
  streams the same run's assistant message from its start (the sender may have none of it), with
  the `steering-message` part where the model read the message.

A run that waits for the user (an approval, a question) is not working: a new message closes it
first, whatever the policy (its approvals expire with the reason `new_user_message`).
"""

from __future__ import annotations

from typing import Any, cast, get_args

from pydantic import JsonValue

from ..agent.definition import NewMessagePolicy
from ..protocol.parts import UIMessage
from ..protocol.request import message_to_wire
from ..runtime.inbox import enqueue
from ..runtime.safe_point import INTERRUPTED
from ..runtime.services import Services
from ..store.branches import BranchFrom
from ..store.errors import ActiveRunExists, Conflict, NotFound
from ..store.operations.inbox import NoActiveRun
from ..store.records import TERMINAL, RunRecord
from .errors import ApiError

__all__ = ["POLICY_FIELD", "RunEnded", "policy_of", "queue_edit", "while_working"]

POLICY_FIELD = "onNewMessage"
_POLICIES: tuple[str, ...] = get_args(NewMessagePolicy)


class RunEnded(Exception):
    """The run the message met has ended meanwhile: start the turn as usual."""


def policy_of(services: Services, user_id: str, conversation_id: str, body: dict[str, JsonValue]) -> NewMessagePolicy:
    """The request's `onNewMessage`, else the conversation's agent's setting (a 400 for another value)."""
    asked = body.get(POLICY_FIELD)
    if asked is not None:
        if not isinstance(asked, str) or asked not in _POLICIES:
            raise ApiError(400, f"{POLICY_FIELD}: must be one of {', '.join(_POLICIES)}")
        return cast(NewMessagePolicy, asked)
    try:
        agent_name = services.store.get_conversation(user_id, conversation_id).agent
    except NotFound:
        agent_name = None
    agent = services.agent_of_run(agent_name) if agent_name is not None else services.agent(None)
    return agent.on_new_message


def describe(run: RunRecord) -> str:
    """What a 409 says is running."""
    answering = f" (answering message {run.request_message_id})" if run.request_message_id else ""
    return f"run {run.run_id} is {run.status} in this chat{answering}"


def while_working(
    services: Services,
    user_id: str,
    conversation_id: str,
    message: UIMessage,
    active: RunRecord,
    policy: NewMessagePolicy,
    context: dict[str, JsonValue],
) -> tuple[str, str | None, list[str], Any]:
    """Apply `policy` to `message` while `active` works: `(run id, queued message id, prelude, after)`.

    Raises `RunEnded` when the run ended meanwhile (the caller starts the turn), `ApiError` 409 for
    `reject` or a message id the chat already has.
    """
    if policy == "reject":
        raise ApiError(
            409,
            f"{describe(active)}: wait for it, abort it, or send with {POLICY_FIELD} queue, interrupt or steer",
        )
    wire = cast(dict[str, JsonValue], message_to_wire(message))
    try:
        entry = enqueue(
            services,
            user_id,
            conversation_id,
            wire,
            mode="steer" if policy == "steer" else "queue",
            active_run_id=active.run_id,
            context=context,
            interrupt=INTERRUPTED if policy == "interrupt" else None,
        )
    except (NoActiveRun, ActiveRunExists):
        raise RunEnded from None
    except Conflict as error:
        raise ApiError(409, f"messages: message id {message.id} is already in this chat") from error
    if entry.mode == "queue":
        return entry.run_id, entry.message_id, [], None
    run = services.store.get_run(user_id, active.run_id)
    if run.status in TERMINAL["run"]:  # ended before the step boundary: it answers the message as a turn
        return entry.next_run_id or entry.run_id, entry.message_id, [], None
    return run.run_id, None, [], None  # the run's whole message: this client may have none of it


def queue_edit(
    services: Services,
    user_id: str,
    conversation_id: str,
    edit: tuple[UIMessage, dict[str, Any]],
    point: BranchFrom,
    active: RunRecord,
    policy: NewMessagePolicy,
    context: dict[str, JsonValue],
) -> tuple[str, str] | None:
    """An edit while `active` works, under `queue` or `interrupt`: it waits in the inbox with its branch point.

    `steer` queues it too (an edit rewrites history: it cannot join the running step). Its run starts
    the branch once `active` has ended, if the point is still on the active branch then (else the
    entry is dropped and its stream ends aborted). Returns `(run id, queued message id)`, or None
    when the run ended meanwhile (the caller starts the edit as usual).
    """
    edited, wire = edit
    try:
        entry = enqueue(
            services,
            user_id,
            conversation_id,
            cast(dict[str, JsonValue], wire),
            mode="queue",
            active_run_id=active.run_id,
            context=context,
            interrupt=INTERRUPTED if policy == "interrupt" else None,
            branch=point,
        )
    except (NoActiveRun, ActiveRunExists):
        return None
    except Conflict as error:
        raise ApiError(409, f"messageId: message {edited.id} cannot be edited now: {error}") from None
    return entry.run_id, entry.message_id

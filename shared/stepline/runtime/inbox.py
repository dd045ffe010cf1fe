"""Messages that arrive while a run works: queued behind it, or steering it (`Agent.on_new_message`).

- **queue**: the message waits in the conversation's inbox with the ids of the run that will
  answer it; when the active run ends, `start_next` starts that run (the first waiting message,
  in the order they came; its entry leaves the inbox in the same write that starts the turn).
- **interrupt**: the message is queued first and the active run is marked to stop at its next safe
  point, in one write (`store.enqueue_message` with `interrupt`), so it is answered as soon as the
  run has stopped.
- **steer**: the message waits for the running run's next step boundary, where `deliver_steers`
  moves it into the run's state (a user message after the tool results, before the next model
  call) and its event log (a `steering-message` part of the same assistant message). A message the run
  did not reach before it ended is answered like a queued one.

Every run's end calls `start_next` (the FinalizeRun and FailRun handlers, the abort route, the
reconciler), so a waiting message is never left behind an ended run.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Literal

from pydantic import JsonValue

from ..loop.state import LoopState
from ..store.branches import BranchFrom
from ..store.errors import ActiveRunExists, Conflict, NotFound, TerminalState
from ..store.records import CheckpointRecord, InboxEntry, NewEvent, RunRecord
from ..store.steered import steer_chunk, user_model_messages
from .services import Services

__all__ = ["deliver_steers", "enqueue", "start_after", "start_next"]

_LOG = logging.getLogger("stepline.runtime")


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def enqueue(
    services: Services,
    user_id: str,
    conversation_id: str,
    message: dict[str, JsonValue],
    *,
    mode: Literal["queue", "steer"],
    active_run_id: str,
    context: dict[str, JsonValue],
    interrupt: str | None = None,
    branch: BranchFrom | None = None,
) -> InboxEntry:
    """Queue `message` behind the active run, or (`steer`) for it; the same message again is the stored entry.

    `interrupt` (a stop reason): the message goes first and the active run is marked to stop, in
    the same write. Raises `NoActiveRun` (the run ended meanwhile: start a turn instead),
    `ActiveRunExists` (another run is active now), `Conflict` (the message id is taken).
    `branch` (an edit, queued only): its run starts that branch (`store.branches`).
    """
    steer = mode == "steer"
    entry = InboxEntry(
        message_id=str(message["id"]),
        mode=mode,
        message=message,
        run_id=active_run_id if steer else _new_id("run"),
        next_run_id=_new_id("run") if steer else None,
        assistant_message_id=_new_id("msg"),
        context=context,
        queued_at=services.clock(),
        branch=branch is not None,
        branch_after=None if branch is None else branch.after,
    )
    stop = None if interrupt is None else (active_run_id, interrupt)
    return services.store.enqueue_message(user_id, conversation_id, entry, now=services.clock(), interrupt=stop)


def answering_run(entry: InboxEntry) -> str:
    """The run that answers the entry as a turn of its own."""
    return entry.next_run_id if entry.next_run_id is not None else entry.run_id


def start_next(services: Services, user_id: str, conversation_id: str) -> str | None:
    """Start the run of the first waiting message once no run is active; its run id, or None.

    Safe to call from several enders at once: one start wins, the others find a run active or the
    entry gone.
    """
    try:
        conversation = services.store.get_conversation(user_id, conversation_id)
    except NotFound:
        return None
    if conversation.active_run_id is not None or not conversation.inbox:
        return None
    from .turn import begin_turn  # only when a message waits: a run's end without one never loads it

    entry = conversation.inbox[0]
    claims = entry.context.get("claims")
    body = entry.context.get("body")
    try:
        started = begin_turn(
            services,
            user_id,
            conversation_id=conversation_id,
            run_id=answering_run(entry),
            assistant_message_id=entry.assistant_message_id,
            user_message=entry.message,
            claims=claims if isinstance(claims, dict) else None,
            body=body if isinstance(body, dict) else None,
            dequeue=entry.message_id,
            branch=BranchFrom(entry.branch_after) if entry.branch else None,
        )
    except ActiveRunExists:
        return None
    except Conflict:
        if entry.branch:  # its branch point left the active branch meanwhile: the edit cannot start
            _drop_edit(services, user_id, conversation_id, entry)
        return None
    _LOG.info("run %s answers queued message %s", started.run.run_id, entry.message_id)
    return started.run.run_id


def _drop_edit(services: Services, user_id: str, conversation_id: str, entry: InboxEntry) -> None:
    """An edit whose branch point is gone leaves the inbox (its stream ends aborted), so the next one can start."""
    _LOG.info("queued edit %s dropped: its branch point left the active branch", entry.message_id)
    try:
        services.store.cancel_queued(user_id, conversation_id, entry.message_id, now=services.clock())
    except (NotFound, Conflict):
        return
    start_next(services, user_id, conversation_id)


def start_after(services: Services, user_id: str, run_id: str) -> str | None:
    """`start_next` in the conversation of `run_id`, once that run has ended."""
    try:
        run = services.store.get_run(user_id, run_id)
    except NotFound:
        return None
    return start_next(services, user_id, run.conversation_id)


def deliver_steers(
    services: Services, run: RunRecord, state: LoopState, checkpoint: CheckpointRecord
) -> tuple[LoopState, CheckpointRecord]:
    """At a step boundary: the run's steering messages into its state, checkpoint and log, at once.

    Only at a clean boundary (nothing streamed since the checkpoint: a crashed attempt's parts are
    dropped first, by the step's redo); the state and checkpoint are returned unchanged otherwise.
    """
    if run.last_event_seq != checkpoint.last_event_seq:
        return state, checkpoint
    delivered: list[LoopState] = []

    def build(entries: Sequence[InboxEntry]) -> tuple[dict[str, object], list[NewEvent]]:
        users = [m for e in entries for m in user_model_messages(e.message)]
        steered = state.model_copy(update={"response_messages": [*state.response_messages, *users]})
        delivered[:] = [steered]
        chunks: list[dict[str, JsonValue]] = [steer_chunk(e.message) for e in entries]
        return steered.model_dump(mode="json", by_alias=True), [NewEvent(type="data", chunks=chunks)]

    try:
        staged = services.store.take_steers(run.user_id, run.run_id, build, now=services.clock())
    except TerminalState:
        return state, checkpoint
    if staged is None:
        return state, checkpoint
    _LOG.info("run %s took %d steering messages", run.run_id, len(staged.entries))
    return delivered[-1], staged.checkpoint

"""A child run's progress inside its parent's message: its UIMessage so far, as preliminary tool outputs.

The AI SDK's own sub-agent pattern: the parent's agent-tool part receives `tool-output-available`
with `preliminary: true` and, as output, the child's UIMessage so far (its stored parts: masked as
the child's own message is; its metadata names the child's run, agent and start), so a stock
`useChat` client renders the child inside the parent's message, and the call's final output (the
child's answer, `stepline.runtime.child_results`) replaces it when the parent goes on.

Batched by steps, so the bytes stay linear in the child's output: the child's message is written
into the parent's log at the end of its steps 1, 2, 4, 8, … (step numbers plus one that are powers
of two), whenever it starts to wait (an approval, a question) and at its last step (finished or
failed: its metadata then says so, with the time), so the parent's message shows the child's whole
trace while the parent still waits for its other calls. Each write is the whole message so far, one
event (one append: one write of the parent's run and one of its log); the messages of the
power-of-two steps sum to at most twice the child's final message, plus one message per wait and
the last one.
Nothing per delta: a child step's deltas reach the parent as part of the message at its end.
"""

from __future__ import annotations

import logging

from pydantic import JsonValue

from ..protocol.chunks import ToolOutputAvailableChunk
from ..store.errors import ConcurrentUpdate, NotFound, TerminalState
from ..store.event_batcher import event_type_of
from ..store.records import NewEvent, RunRecord
from .child_results import parent_of
from .services import Services
from .stream_push import notify

__all__ = ["mirror_progress", "mirrors_at"]

_LOG = logging.getLogger("stepline.runtime")
_APPEND_ATTEMPTS = 10
_WAITS = frozenset({"await-approval", "await-client"})
_ENDS = {"finished": "completed", "failed": "failed"}
"""A child's last step, by its outcome: the status its message's metadata says it ended with."""


def mirrors_at(step_number: int, kind: str) -> bool:
    """Whether the end of the child's step `step_number` (0-based) is written into the parent's message."""
    return kind in _WAITS or kind in _ENDS or (step_number + 1) & step_number == 0


def mirror_progress(
    services: Services, run: RunRecord, parts: list[dict[str, JsonValue]], *, step_number: int, kind: str
) -> None:
    """The child's message so far into its parent's log (a run without a parent: nothing)."""
    parent = parent_of(run)
    if parent is None or not mirrors_at(step_number, kind):
        return
    metadata: dict[str, JsonValue] = {"runId": run.run_id, "agent": run.agent, "startedAt": run.started_at}
    if kind in _ENDS:
        metadata |= {"status": _ENDS[kind], "endedAt": services.clock()}
    message: dict[str, JsonValue] = {
        "id": run.assistant_message_id,
        "role": "assistant",
        "parts": list(parts),
        "metadata": metadata,
    }
    chunk = ToolOutputAvailableChunk(tool_call_id=str(parent["toolCallId"]), output=message, preliminary=True)
    event = NewEvent(type=event_type_of(chunk.type), chunks=[chunk.to_wire()])
    parent_run = str(parent["runId"])
    for _ in range(_APPEND_ATTEMPTS):
        try:
            written = services.store.append_events(run.user_id, parent_run, [event], now=services.clock())
        except ConcurrentUpdate:  # a sibling wrote meanwhile
            continue
        except (TerminalState, NotFound):  # the parent has ended: nobody reads its log any more
            return
        notify(services.stream_push, run.user_id, parent_run, written[-1].seq)
        return
    _LOG.warning("child run %s could not write its progress into run %s", run.run_id, parent_run)

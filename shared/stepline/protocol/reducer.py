"""Fold UIMessageChunks into the assistant UIMessage, with the AI SDK's aggregation rules.

Mirrors `processUIMessageStream` (`packages/ai/src/ui/process-ui-message-stream.ts`) and
`readUIMessageStream` (`packages/ai/src/ui-message-stream/read-ui-message-stream.ts`) of `ai@7.0.173`.
The same reducer serves the client-side view (tests compare it with the SDK) and the server, which
persists the message that its own stream produces.

It stays linear in the size of the stream: text and reasoning deltas are collected as pieces and
joined only when a snapshot is read, and streamed tool input is kept in a `PartialJson` that scans
each character once and parses only on a read. Reading a snapshot after every chunk is the
caller's choice (and then each read costs the size of the message, as in the SDK).

A protocol violation (a delta for a part that was never started, an output for an unknown tool
call, a response for an unknown approval) raises `UIMessageStreamError` with the chunk type and id,
and leaves the message as it was before that chunk.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import UIMessageStreamError
from ._reducer_state import LazyText, Part, as_dict
from ._reducer_tools import ToolParts
from .chunks import (
    AbortChunk,
    CustomChunk,
    DataChunk,
    ErrorChunk,
    FileChunk,
    FinishChunk,
    FinishStepChunk,
    MessageMetadataChunk,
    ReasoningDeltaChunk,
    ReasoningEndChunk,
    ReasoningFileChunk,
    ReasoningStartChunk,
    ResetStepChunk,
    SourceDocumentChunk,
    SourceUrlChunk,
    StartChunk,
    StartStepChunk,
    SteeringMessageChunk,
    TextDeltaChunk,
    TextEndChunk,
    TextStartChunk,
    ToolApprovalRequestChunk,
    ToolApprovalResponseChunk,
    ToolInputAvailableChunk,
    ToolInputDeltaChunk,
    ToolInputErrorChunk,
    ToolInputStartChunk,
    ToolOutputAvailableChunk,
    ToolOutputDeniedChunk,
    ToolOutputErrorChunk,
    UIMessageChunk,
)
from .merge import merge_metadata
from .parts import UIMessage

__all__ = ["ReduceResult", "UIMessageReducer", "read_ui_message_stream", "reduce_ui_message_stream"]


class UIMessageReducer(ToolParts):
    """Incremental state of one assistant message being built from a chunk stream.

    Args:
        message: An existing message to continue (only an assistant message is continued, as in the SDK).
        message_id: The id of a new message when `message` is not an assistant message.
        reset_on_message_id_change: A `start` with a different `messageId` begins a fresh message
            (what `readUIMessageStream` does).
        reset_on_first_start: The first `start` begins a fresh message (what `Chat` does with a
            resumed stream, which is a full replay).
        on_error: Called with the text of each `error` chunk.
        on_data: Called with each data chunk, transient or not, once it is accepted.
    """

    def __init__(
        self,
        message: UIMessage | dict[str, Any] | None = None,
        *,
        message_id: str = "",
        reset_on_message_id_change: bool = True,
        reset_on_first_start: bool = False,
        on_error: Callable[[str], None] | None = None,
        on_data: Callable[[DataChunk], None] | None = None,
    ) -> None:
        self._reset_on_id_change = reset_on_message_id_change
        self._reset_on_first_start = reset_on_first_start
        self._seen_start = False
        self._on_error = on_error
        self._on_data = on_data
        self.finish_reason: str | None = None
        """The `finishReason` of the last `finish` chunk that had one."""
        self.aborted = False
        """True once an `abort` chunk arrived."""
        self._reset(as_dict(message), message_id)

    # -- the reducer ------------------------------------------------------------------------

    def apply(self, chunk: UIMessageChunk) -> bool:  # noqa: C901 - one exhaustive dispatch over chunk types
        """Apply one chunk. Returns True when the message visibly changed (the SDK's `write()`)."""
        match chunk:
            case TextStartChunk() | ReasoningStartChunk():
                is_text = isinstance(chunk, TextStartChunk)
                part: Part = {"type": "text"}
                if not is_text:
                    part = {"type": "reasoning", "id": chunk.id}
                part["text"] = ""
                if chunk.provider_metadata is not None:
                    part["providerMetadata"] = chunk.provider_metadata
                part["state"] = "streaming"
                lazy = LazyText(part)
                (self._active_text if is_text else self._active_reasoning)[chunk.id] = lazy
                self._lazy_text[id(part)] = lazy
                self._parts.append(part)
                return True
            case TextDeltaChunk() | ReasoningDeltaChunk():
                lazy = self._active(chunk)
                lazy.pieces.append(chunk.delta)
                if chunk.provider_metadata is not None:
                    lazy.part["providerMetadata"] = chunk.provider_metadata
                return True
            case TextEndChunk() | ReasoningEndChunk():
                lazy = self._active(chunk)
                lazy.flush()
                part = lazy.part
                part["state"] = "done"
                if isinstance(chunk, TextEndChunk) and chunk.citations is not None:
                    part["citations"] = copy.deepcopy(chunk.citations)
                if chunk.provider_metadata is not None:
                    part["providerMetadata"] = chunk.provider_metadata
                del (self._active_text if isinstance(chunk, TextEndChunk) else self._active_reasoning)[chunk.id]
                self._lazy_text.pop(id(part), None)
                return True
            case CustomChunk():
                part = {"type": "custom", "kind": chunk.kind}
                if chunk.provider_metadata is not None:
                    part["providerMetadata"] = chunk.provider_metadata
                self._parts.append(part)
                return True
            case FileChunk() | ReasoningFileChunk():
                part = {"type": chunk.type, "mediaType": chunk.media_type, "url": chunk.url}
                if chunk.provider_metadata is not None:
                    part["providerMetadata"] = chunk.provider_metadata
                self._parts.append(part)
                return True
            case SourceUrlChunk() | SourceDocumentChunk():
                self._parts.append(chunk.to_wire())
                return True
            case ToolInputStartChunk():
                return self._tool_input_start(chunk)
            case ToolInputDeltaChunk():
                return self._tool_input_delta(chunk)
            case ToolInputAvailableChunk():
                return self._tool_input_available(chunk)
            case ToolInputErrorChunk():
                return self._tool_input_error(chunk)
            case ToolApprovalRequestChunk():
                return self._approval_request(chunk)
            case ToolApprovalResponseChunk():
                return self._approval_response(chunk)
            case ToolOutputDeniedChunk():
                return self._tool_output_denied(chunk)
            case ToolOutputAvailableChunk() | ToolOutputErrorChunk():
                return self._tool_output(chunk)
            case SteeringMessageChunk():
                self._parts.append({"type": "steering-message", "id": chunk.id, "parts": chunk.parts})
                return True
            case StartStepChunk():
                self._parts.append({"type": "step-start"})
                return False
            case FinishStepChunk():
                # ai 7.0.173: parts are closed by their own end chunks (7.0.77 closed them here).
                return False
            case ResetStepChunk():
                return self._reset_step()
            case StartChunk():
                return self._start(chunk)
            case FinishChunk():
                if chunk.finish_reason is not None:
                    self.finish_reason = chunk.finish_reason
                return self._merge_metadata(chunk.message_metadata)
            case MessageMetadataChunk():
                return self._merge_metadata(chunk.message_metadata)
            case ErrorChunk():
                if self._on_error is not None:
                    self._on_error(chunk.error_text)
                return False
            case AbortChunk():
                self.aborted = True
                return False
            case DataChunk():
                return self._data(chunk)

    def _active(self, chunk: TextDeltaChunk | TextEndChunk | ReasoningDeltaChunk | ReasoningEndChunk) -> LazyText:
        is_text = isinstance(chunk, TextDeltaChunk | TextEndChunk)
        lazy = (self._active_text if is_text else self._active_reasoning).get(chunk.id)
        if lazy is None:
            kind = "text" if is_text else "reasoning"
            raise UIMessageStreamError(
                chunk_type=chunk.type,
                chunk_id=chunk.id,
                message=(
                    f'Received {chunk.type} for missing {kind} part with ID "{chunk.id}". '
                    f'Ensure a "{kind}-start" chunk is sent before any "{chunk.type}" chunks.'
                ),
            )
        return lazy

    def _reset_step(self) -> bool:
        start = self._current_step_start()
        self._active_text = {}
        self._active_reasoning = {}
        self._partial_tools = {}
        if start >= len(self._parts):
            return False
        for part in self._parts[start:]:
            self._lazy_text.pop(id(part), None)
            self._lazy_inputs.pop(id(part), None)
        del self._parts[start:]
        return True

    def _start(self, chunk: StartChunk) -> bool:
        should_reset = (self._reset_on_first_start and not self._seen_start) or (
            self._reset_on_id_change and chunk.message_id is not None and chunk.message_id != self._message["id"]
        )
        self._seen_start = True
        if should_reset:
            self._reset(None, chunk.message_id if chunk.message_id is not None else self._message["id"])
            self.finish_reason = None
        if chunk.message_id is not None:
            self._message["id"] = chunk.message_id
        changed = self._merge_metadata(chunk.message_metadata)
        return should_reset or chunk.message_id is not None or changed

    def _merge_metadata(self, update: Any) -> bool:
        if update is None:
            return False
        self._message["metadata"] = merge_metadata(self._message.get("metadata"), update)
        return True

    def _data(self, chunk: DataChunk) -> bool:
        if chunk.transient:
            if self._on_data is not None:
                self._on_data(chunk)
            return False
        existing = None
        if chunk.id is not None:
            existing = next((p for p in self._parts if p["type"] == chunk.type and p.get("id") == chunk.id), None)
        if existing is not None:
            existing["data"] = chunk.data
        else:
            self._parts.append(chunk.to_wire())
        if self._on_data is not None:
            self._on_data(chunk)
        return True


@dataclass(frozen=True, slots=True)
class ReduceResult:
    """What a whole stream amounted to."""

    message: dict[str, Any] | None
    """The final message in wire form, or None when no chunk ever changed it."""
    error: UIMessageStreamError | None
    """The protocol violation that stopped the reduction, if any."""
    errors: tuple[str, ...]
    """The texts of the stream's `error` chunks."""
    finish_reason: str | None
    aborted: bool


def reduce_ui_message_stream(
    chunks: Iterable[UIMessageChunk],
    *,
    message: UIMessage | dict[str, Any] | None = None,
    terminate_on_error: bool = False,
) -> ReduceResult:
    """Reduce a whole stream to its final message, without per-chunk snapshots (linear time).

    The message is the reducer's whole final state, as the SDK's server-side `onEnd` sees it
    (`handle-ui-message-stream-finish.ts`): a trailing `step-start`, which triggers no client
    update, is included. It is None when no chunk ever changed the message (when
    `readUIMessageStream` would yield nothing). Like `readUIMessageStream`, a protocol violation
    ends the reduction with the message built before it; with `terminate_on_error` it is raised.
    """
    errors: list[str] = []
    reducer = UIMessageReducer(message, on_error=errors.append)
    changed = False
    violation: UIMessageStreamError | None = None
    for chunk in chunks:
        try:
            changed = reducer.apply(chunk) or changed
        except UIMessageStreamError as error:
            if terminate_on_error:
                raise
            violation = error
            break
    return ReduceResult(
        message=copy.deepcopy(reducer.message()) if changed else None,
        error=violation,
        errors=tuple(errors),
        finish_reason=reducer.finish_reason,
        aborted=reducer.aborted,
    )


def read_ui_message_stream(
    chunks: Iterable[UIMessageChunk],
    *,
    message: UIMessage | dict[str, Any] | None = None,
    on_error: Callable[[Exception], None] | None = None,
    terminate_on_error: bool = False,
) -> Iterator[dict[str, Any]]:
    """Yield a snapshot of the message after every visible change (the SDK's `readUIMessageStream`).

    Error chunks and protocol violations go to `on_error`; a violation ends the iteration (or is
    raised with `terminate_on_error`).
    """

    def error_text(text: str) -> None:
        if on_error is not None:
            on_error(Exception(text))

    reducer = UIMessageReducer(message, on_error=error_text)
    for chunk in chunks:
        try:
            changed = reducer.apply(chunk)
        except UIMessageStreamError as error:
            if on_error is not None:
                on_error(error)
            if terminate_on_error:
                raise
            return
        if changed:
            yield reducer.snapshot()
